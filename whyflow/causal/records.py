"""A record that serialises as the mapping it stands for: the keys its writer set, in their order.

State fields that were plain dicts became typed records; :class:`Record` keeps ``state.json``
byte-for-byte what it was (a skipped step holds only the keys it wrote, not every field with a
default) and lets a ``state.json`` written before the records existed load.
"""

from __future__ import annotations

from typing import Any, Self

from pydantic import (
    BaseModel,
    ModelWrapValidatorHandler,
    PrivateAttr,
    SerializerFunctionWrapHandler,
    model_serializer,
    model_validator,
)

from whyflow.core.job import JOB_CONFIG

__all__ = ["Record"]


class Record(BaseModel):
    """A record that serialises the fields its writer set, in the order it set them (what the old dict held)."""

    model_config = JOB_CONFIG

    _order: tuple[str, ...] = PrivateAttr(default=())
    """The keys of the mapping it was built from, in their order."""

    @model_validator(mode="wrap")
    @classmethod
    def _remember_order(cls, data: Any, handler: ModelWrapValidatorHandler[Self]) -> Self:
        record = handler(data)
        if isinstance(data, dict) and not record._order:
            record._order = tuple(str(k) for k in data)
        return record

    @model_serializer(mode="wrap")
    def _only_set(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        data: dict[str, Any] = handler(self)
        fields = type(self).model_fields
        kept = {
            k: v for k, v in data.items() if k in self.model_fields_set or _name(fields, k) in self.model_fields_set
        }
        first = [k for k in self._order if k in kept]
        return {k: kept[k] for k in [*first, *(k for k in kept if k not in first)]}


def _name(fields: dict[str, Any], key: str) -> str:
    """The field name serialised as ``key`` (its alias, if it has one)."""
    return next((n for n, f in fields.items() if f.alias == key), key)
