# memkg as a service: the wheel built in a first stage, installed in a slim image that runs as
# an unprivileged user. Build: docker build -t memkg .   Run: see compose.yaml.
FROM python:3.12-slim AS build
RUN apt-get update \
    && apt-get install -y --no-install-recommends build-essential \
    && rm -rf /var/lib/apt/lists/*
WORKDIR /src
COPY pyproject.toml README.md ./
COPY engine ./engine
# memkg's wheel and every dependency's (durable-rules is compiled here, not in the final image)
RUN pip wheel --no-cache-dir --wheel-dir /wheels ".[service,postgres]"

FROM python:3.12-slim
ENV PYTHONDONTWRITEBYTECODE=1 PYTHONUNBUFFERED=1
RUN useradd --create-home --uid 10001 --shell /usr/sbin/nologin memkg
COPY --from=build /wheels /wheels
RUN pip install --no-cache-dir --no-index --find-links /wheels "memkg[service,postgres]" \
    && rm -rf /wheels
USER memkg
WORKDIR /home/memkg
RUN mkdir -p /home/memkg/data
VOLUME ["/home/memkg/data"]
EXPOSE 8080
HEALTHCHECK --interval=30s --timeout=5s --start-period=20s \
    CMD ["python", "-c", "import urllib.request; urllib.request.urlopen('http://127.0.0.1:8080/v1/health', timeout=4)"]
ENTRYPOINT ["memkg"]
CMD ["--db", "/home/memkg/data/memkg.db", "serve", "--host", "0.0.0.0", "--port", "8080"]
