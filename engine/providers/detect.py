"""Find model servers already running on this machine (for ``cairn model`` and first run).

Each known server answers a cheap GET on its usual port; every probe runs at once on a thread
pool with a short timeout, so a machine with nothing running answers in about one timeout.
Nothing here raises: a server that is down, slow or answers nonsense is simply not listed.
"""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor, wait
from typing import Any

from pydantic import BaseModel, Field

OLLAMA = "Ollama"
LM_STUDIO = "LM Studio"
LLAMA_CPP = "llama.cpp"

DEFAULT_PORTS: dict[str, int] = {OLLAMA: 11434, LM_STUDIO: 1234, LLAMA_CPP: 8080}

# Probes go straight to the address: a proxy from the environment has no business seeing
# requests to a server on this machine, and would break loopback detection.
_DIRECT = urllib.request.build_opener(urllib.request.ProxyHandler({}))


class DetectedServer(BaseModel):
    name: str  # "Ollama", "LM Studio", "llama.cpp"
    base_url: str  # the OpenAI-compatible endpoint, ending in /v1
    models: list[str] = Field(default_factory=list)


def http_json(
    url: str,
    *,
    timeout: float,
    payload: Any = None,
    headers: Mapping[str, str] | None = None,
    direct: bool = False,
) -> Any:
    """GET (or POST ``payload`` as JSON) and decode the JSON answer; raises on any failure.

    ``direct`` bypasses proxies from the environment (for servers on this machine).
    """
    data = None if payload is None else json.dumps(payload).encode()
    request = urllib.request.Request(url, data=data, method="GET" if data is None else "POST")
    request.add_header("Accept", "application/json")
    if data is not None:
        request.add_header("Content-Type", "application/json")
    for key, value in (headers or {}).items():
        request.add_header(key, value)
    opener = _DIRECT if direct else urllib.request.build_opener()
    with opener.open(request, timeout=timeout) as response:
        # A model list is small; a server streaming endlessly must not hold the probe.
        return json.loads(response.read(4 * 1024 * 1024))


def clean_model_name(name: str) -> str:
    """A model id as a person would write it: llama.cpp lists its one model by the path it
    was loaded from (``/models//SmolLM2-135M-Instruct-Q8_0.gguf``), which it accepts under
    any name; its file name is the useful part."""
    path = name.replace("\\", "/")
    if "/" in path and path.lower().endswith(".gguf"):
        return path.rstrip("/").rsplit("/", 1)[-1]
    return name


def _model_ids(payload: Any) -> list[str]:
    data = payload.get("data") if isinstance(payload, dict) else None
    if not isinstance(data, list):
        raise ValueError("not an OpenAI model list")
    return [str(item["id"]) for item in data if isinstance(item, dict) and "id" in item]


def _probe_ollama(root: str, timeout: float) -> DetectedServer | None:
    payload = http_json(f"{root}/api/tags", timeout=timeout, direct=True)
    models = payload.get("models") if isinstance(payload, dict) else None
    if not isinstance(models, list):
        return None
    names = [str(m.get("name") or m.get("model")) for m in models if isinstance(m, dict)]
    return DetectedServer(name=OLLAMA, base_url=f"{root}/v1", models=names)


def _probe_openai_list(name: str) -> Callable[[str, float], DetectedServer | None]:
    def probe(root: str, timeout: float) -> DetectedServer | None:
        try:
            models = _model_ids(http_json(f"{root}/v1/models", timeout=timeout, direct=True))
        except (OSError, ValueError) as exc:
            # Older llama.cpp servers have no /v1/models but describe their one model here.
            if name != LLAMA_CPP or isinstance(exc, TimeoutError):
                return None
            props = http_json(f"{root}/props", timeout=timeout, direct=True)
            if not isinstance(props, dict) or "default_generation_settings" not in props:
                return None
            path = str(props.get("model_path") or "")
            models = [path.replace("\\", "/").rsplit("/", 1)[-1]] if path else []
        if name == LLAMA_CPP:
            models = [clean_model_name(model) for model in models]
        return DetectedServer(name=name, base_url=f"{root}/v1", models=models)

    return probe


_PROBES: dict[str, Callable[[str, float], DetectedServer | None]] = {
    OLLAMA: _probe_ollama,
    LM_STUDIO: _probe_openai_list(LM_STUDIO),
    LLAMA_CPP: _probe_openai_list(LLAMA_CPP),
}


def _safe(
    probe: Callable[[str, float], DetectedServer | None], root: str, timeout: float
) -> DetectedServer | None:
    try:
        return probe(root, timeout)
    except Exception:
        # Down, refused, timed out, not JSON, not the expected shape: all mean "not here".
        return None


def detect_local_servers(
    timeout: float = 0.3,
    hosts: Sequence[str] = ("127.0.0.1",),
    ports: Mapping[str, int] | None = None,
) -> list[DetectedServer]:
    """Model servers answering on ``hosts``, in the order Ollama, LM Studio, llama.cpp.

    ``ports`` maps a server name to the port to probe; when given, only those servers are
    probed (a test points one at its own server, a user at a non-default port).
    """
    wanted = dict(DEFAULT_PORTS if ports is None else ports)
    jobs = [
        (_PROBES[name], f"http://{_host(host)}:{port}")
        for host in hosts
        for name, port in wanted.items()
        if name in _PROBES
    ]
    if not jobs:
        return []
    pool = ThreadPoolExecutor(max_workers=len(jobs), thread_name_prefix="cairn-detect")
    try:
        futures = [pool.submit(_safe, probe, root, timeout) for probe, root in jobs]
        # The socket timeout bounds each read, not a server trickling bytes: a probe still
        # running after a few timeouts is left behind rather than waited for.
        wait(futures, timeout=3 * timeout + 0.5)
    finally:
        pool.shutdown(wait=False, cancel_futures=True)
    found = [f.result() for f in futures if f.done() and not f.cancelled()]
    return [server for server in found if server is not None]


def _host(host: str) -> str:
    return f"[{host}]" if ":" in host and not host.startswith("[") else host
