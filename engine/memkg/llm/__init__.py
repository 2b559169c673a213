"""Language model access: the ``LLM`` port, its in-memory twin, and (in ``openai_adapter``)
the adapter over the official ``openai`` client, imported only when an engine needs it."""

from memkg.llm.memory import MemoryLLM
from memkg.llm.port import LLM, Message, Reply, Tool, ToolCall
from memkg.llm.wire import messages_to_wire
from memkg.model.settings import LLMConfig

__all__ = [
    "LLM",
    "LLMConfig",
    "MemoryLLM",
    "Message",
    "Reply",
    "Tool",
    "ToolCall",
    "messages_to_wire",
]
