"""What model calls cost in USD, from genai-prices' offline price table (the ``cost`` extra).

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
from collections.abc import Mapping
from datetime import datetime
from decimal import Decimal
from types import ModuleType
from typing import Any

#: Which provider a call's model is looked up with, by the tool an importer read it from
#: (spec §19's ``imported_from.tool``): Claude Code calls Anthropic's API and Codex OpenAI's.
TOOL_PROVIDERS = {"claude-code": "anthropic", "codex": "openai"}
_COUNTS = ("input_tokens", "output_tokens", "cache_read_tokens", "cache_write_tokens", "reasoning_tokens")


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


def _usage(module: ModuleType, counts: Mapping[str, int]) -> Any:
    return module.Usage(
        input_tokens=counts["input_tokens"],
        output_tokens=counts["output_tokens"],
        cache_read_tokens=counts["cache_read_tokens"],
        cache_write_tokens=counts["cache_write_tokens"],
        output_reasoning_tokens=counts["reasoning_tokens"],
    )


def _linear(model_price: Any, tiered: type) -> bool:
    """Whether the price of several calls is the price of their summed counts: no price is
    tiered (a cliff on one call's input) and none is charged per request."""
    if getattr(model_price, "requests_kcount", None) is not None:
        return False
    return not any(isinstance(value, tiered) for value in vars(model_price).values())


def _well_formed(counts: Mapping[str, int]) -> bool:
    """Counts a provider reports: the cached input within the input, reasoning within the output."""
    cached = counts["cache_read_tokens"] + counts["cache_write_tokens"]
    return cached <= counts["input_tokens"] and counts["reasoning_tokens"] <= counts["output_tokens"]


class Pricer:
    """Prices the calls of a report, each in a group (a report row), once all are added.

    genai-prices takes about a millisecond per call (it checks and decomposes the counts
    every time), which is most of a report over a large store. Per-token prices are
    linear, so the calls of one group with one model price are summed and priced once;
    a call whose price is tiered or per request, or whose counts are unusual, is priced
    alone. Either way the price is genai-prices' own ``ModelPrice.calc_price``.
    """

    def __init__(self) -> None:
        self.module = _module()
        self._models: dict[tuple[str, str | None], Any] = {}
        self._linear: dict[int, bool] = {}
        self._priced: dict[str, Decimal] = {}
        self._pending: dict[tuple[str, int], tuple[Any, dict[str, int]]] = {}

    def add(
        self,
        group: str,
        counts: Mapping[str, int],
        model: str | None,
        provider: str | None,
        when: datetime | None,
    ) -> bool:
        """Count one call's price into ``group``; False when it has none (no table, no model,
        a model or counts the table does not price)."""
        if not any(counts[name] for name in _COUNTS):
            return True  # no tokens cost nothing, whatever the model (Claude Code's `<synthetic>`)
        model_price = self._model_price(model, provider, when)
        if model_price is None:
            return False
        if _well_formed(counts) and self._is_linear(model_price):
            _, summed = self._pending.setdefault(
                (group, id(model_price)), (model_price, dict.fromkeys(_COUNTS, 0))
            )
            for name in _COUNTS:
                summed[name] += counts[name]
            return True
        try:
            cost = self._calc(model_price, counts)
        except ValueError:  # counts the table refuses (cached input over the input)
            return False
        self._priced[group] = self._priced.get(group, Decimal(0)) + cost
        return True

    def totals(self) -> dict[str, Decimal]:
        """The price of each group's priced calls."""
        found = dict(self._priced)
        for (group, _), (model_price, summed) in self._pending.items():
            found[group] = found.get(group, Decimal(0)) + self._calc(model_price, summed)
        return found

    def _is_linear(self, model_price: Any) -> bool:
        # Model prices are the table's own objects, alive as long as the table: ids are stable.
        found = self._linear.get(id(model_price))
        if found is None:
            tiered = importlib.import_module("genai_prices.types").TieredPrices
            found = self._linear[id(model_price)] = _linear(model_price, tiered)
        return found

    def _calc(self, model_price: Any, counts: Mapping[str, int]) -> Decimal:
        assert self.module is not None  # a model price was found
        total: Decimal = model_price.calc_price(_usage(self.module, counts))["total_price"]
        return total

    def _model_price(self, model: str | None, provider: str | None, when: datetime | None) -> Any:
        """The table's prices for ``model`` at ``when``, or None."""
        if self.module is None or model is None:
            return None
        key = (model, provider)
        if key not in self._models:
            self._models[key] = self._find(model, provider)
        info = self._models[key]
        if info is None:
            return None
        return info.get_prices(when or datetime.now().astimezone())

    def _find(self, model: str, provider: str | None) -> Any:
        snapshot = importlib.import_module("genai_prices.data_snapshot").get_snapshot()
        try:
            return snapshot.find_provider_model(model, None, provider, None)[1]
        except LookupError:
            # A provider the table names otherwise (or does not have this model under):
            # whichever provider the table finds for the model.
            return None if provider is None else self._find(model, None)
