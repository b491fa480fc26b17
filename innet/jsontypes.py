"""JSON as a type: what json.loads gives and json.dumps takes, for typed seams.

Defined with TypeAliasType so that both the type checker and pydantic (the API's response
schemas) understand the recursion.
"""

from __future__ import annotations

from typing_extensions import TypeAliasType

JSONValue = TypeAliasType(
    "JSONValue", "bool | int | float | str | list[JSONValue] | dict[str, JSONValue] | None"
)
JSONObject = TypeAliasType("JSONObject", "dict[str, JSONValue]")

__all__ = ["JSONObject", "JSONValue"]
