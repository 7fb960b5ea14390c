"""The adapters are optional: the core never imports a framework, and a missing one names its extra.

These run without any framework installed (each child hides the framework it checks).
"""

from __future__ import annotations

import subprocess
import sys
import tomllib
from pathlib import Path

PYPROJECT = Path(__file__).resolve().parents[2] / "pyproject.toml"


def python(code: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=False
    )


def test_importing_jsonl_store_and_its_adapters_package_imports_no_framework() -> None:
    """import jsonl_store (and jsonl_store.adapters) leaves the Agents SDK unimported."""
    done = python("import sys, jsonl_store, jsonl_store.adapters; print('agents' in sys.modules)")
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "False"


def test_the_openai_agents_adapter_without_its_extra_is_a_one_line_import_error() -> None:
    """Without the SDK, importing the adapter raises one ImportError line naming the extra."""
    done = python(
        "import sys; sys.modules['agents'] = None\n"
        "try:\n"
        "    import jsonl_store.adapters.openai_agents\n"
        "except ImportError as exc:\n"
        "    print(type(exc).__name__, exc)\n"
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout == (
        "ImportError jsonl_store.adapters.openai_agents needs the OpenAI Agents SDK: "
        'pip install "jsonl_store[openai-agents]"\n'
    )


def test_the_openai_agents_extra_declares_a_floor() -> None:
    """pyproject's openai-agents extra is the SDK with a lower bound the adapter tests ran at."""
    extras = tomllib.loads(PYPROJECT.read_text(encoding="utf-8"))["project"]["optional-dependencies"]
    [requirement] = extras["openai-agents"]
    assert requirement.startswith("openai-agents>=")


def test_the_pydantic_ai_adapters_without_their_extra_are_one_line_import_errors() -> None:
    """Without pydantic-ai (or the harness), each pydantic-ai adapter raises one ImportError naming its extra."""
    for module, hidden, extra in (
        ("pydantic_ai", "pydantic_ai", "pydantic-ai"),
        ("pydantic_ai_harness", "pydantic_ai_harness", "pydantic-ai-harness"),
    ):
        done = python(
            f"import sys; sys.modules[{hidden!r}] = None\n"
            "try:\n"
            f"    import jsonl_store.adapters.{module}\n"
            "except ImportError as exc:\n"
            "    print(type(exc).__name__, exc)\n"
        )
        assert done.returncode == 0, done.stderr
        assert done.stdout.startswith(f"ImportError jsonl_store.adapters.{module} needs ")
        assert done.stdout.endswith(f'pip install "jsonl_store[{extra}]"\n')
        assert done.stdout.count("\n") == 1


def test_the_pydantic_ai_extras_declare_floors() -> None:
    """The pydantic-ai and pydantic-ai-harness extras name their framework with a lower bound."""
    extras = tomllib.loads(PYPROJECT.read_text(encoding="utf-8"))["project"]["optional-dependencies"]
    assert [r.split(">=")[0] for r in extras["pydantic-ai"]] == ["pydantic-ai-slim"]
    assert [r.split(">=")[0] for r in extras["pydantic-ai-harness"]] == ["pydantic-ai-harness[acp]"]
    assert all(">=" in r for r in extras["pydantic-ai"] + extras["pydantic-ai-harness"])


def test_the_langgraph_adapter_without_its_extra_is_a_one_line_import_error() -> None:
    """Without langgraph-checkpoint, importing the LangGraph adapter raises one ImportError naming the extra."""
    done = python(
        "import sys; sys.modules['langgraph'] = None\n"
        "try:\n"
        "    import jsonl_store.adapters.langgraph\n"
        "except ImportError as exc:\n"
        "    print(type(exc).__name__, exc)\n"
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout == (
        'ImportError jsonl_store.adapters.langgraph needs LangGraph: pip install "jsonl_store[langgraph]"\n'
    )


def test_the_langgraph_extra_declares_floors() -> None:
    """The langgraph extra names langgraph and langgraph-checkpoint, each with a lower bound."""
    extras = tomllib.loads(PYPROJECT.read_text(encoding="utf-8"))["project"]["optional-dependencies"]
    assert [r.split(">=")[0] for r in extras["langgraph"]] == ["langgraph", "langgraph-checkpoint"]
    assert all(">=" in r for r in extras["langgraph"])
