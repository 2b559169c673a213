"""Where the language model is and how patiently to talk to it."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field, SecretStr


class LLMConfig(BaseModel):
    """An OpenAI-compatible endpoint; ``api_key`` never appears in ``repr`` or dumps.

    >>> LLMConfig(model="gpt-4o-mini", api_key="sk-test").api_key
    SecretStr('**********')
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    model: str = Field(min_length=1)
    base_url: str = "https://api.openai.com/v1"
    api_key: SecretStr | None = None
    """None for local servers that want no key."""
    timeout_s: float = Field(30.0, gt=0)
    connect_timeout_s: float = Field(5.0, gt=0)
    max_retries: int = Field(2, ge=0, le=10)
    """Retries on connection errors, 408/409/429 and 5xx, with the client's backoff."""
    temperature: float | None = Field(0.0, ge=0, le=2)
