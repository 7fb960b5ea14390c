"""What a model call cost in USD, from genai-prices' offline price table (the ``cost`` extra).

genai-prices (https://github.com/pydantic/genai-prices) ships its price table inside the
package, so a price needs no network and a package version names the table it came from.
Its token counts mean what the store's do (spec §7): ``input_tokens`` includes the cached
input it is given as ``cache_read_tokens`` and ``cache_write_tokens``, and
``output_reasoning_tokens`` is part of ``output_tokens``; each is priced at the model's own
price for it (a part with no price of its own is priced as the whole it belongs to).
Without the extra, or for a model the table does not know, there is no price: never 0.
"""

from __future__ import annotations

import functools
import importlib
from datetime import datetime
from decimal import Decimal
from types import ModuleType
from typing import Any

#: Which provider a call's model is looked up with, by the tool an importer read it from
#: (spec §19's ``imported_from.tool``): Claude Code calls Anthropic's API and Codex OpenAI's.
TOOL_PROVIDERS = {"claude-code": "anthropic", "codex": "openai"}


@functools.cache
def _module() -> ModuleType | None:
    try:
        return importlib.import_module("genai_prices")
    except ImportError:
        return None


def version() -> str | None:
    """``genai-prices <version>``, the price table prices come from, or None without the extra."""
    module = _module()
    return None if module is None else f"genai-prices {module.__version__}"


def price(
    counts: dict[str, Any], model: str | None, provider: str | None, when: datetime | None
) -> Decimal | None:
    """The USD price of one call's token counts, or None when it cannot be priced.

    ``counts`` holds `ModelUsage`'s fields; ``when`` is the call's time (a table may hold a
    model's earlier prices). None without the extra, without a model, for a model (or
    provider) the table does not know, and for counts the table refuses (cached input
    larger than the input: not a call a provider reports).
    """
    module = _module()
    if module is None or model is None:
        return None
    usage = module.Usage(
        input_tokens=counts["input_tokens"],
        output_tokens=counts["output_tokens"],
        cache_read_tokens=counts["cache_read_tokens"],
        cache_write_tokens=counts["cache_write_tokens"],
        output_reasoning_tokens=counts["reasoning_tokens"],
    )
    try:
        found = module.calc_price(usage, model, provider_id=provider, genai_request_timestamp=when)
    except LookupError:
        if provider is None:
            return None
        return price(counts, model, None, when)  # a provider the table names otherwise
    except ValueError:
        return None
    total: Decimal = found.total_price
    return total
