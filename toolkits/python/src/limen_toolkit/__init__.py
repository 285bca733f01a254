"""limen's Python toolkit: write a Flow Tool in Python.

The toolkit converts values under the value encoding of
flow-host-boundary.txt (§ Value encoding, § Toolkits): ``Int`` is a Python
``int`` of any size, ``Decimal`` a ``decimal.Decimal`` (never a float),
``Instant`` and ``Duration`` exact to the nanosecond. It uses the standard
library only.

- :mod:`limen_toolkit.types`: the type model, read from the schemas
  ``flow tools`` lists (:func:`type_from_schema`).
- :mod:`limen_toolkit.values`: the Python values of each Flow type.
- :mod:`limen_toolkit.codec`: :func:`decode` (type-directed, strict; a
  refusal is :class:`Refused` with the JSON path and the reason) and
  :func:`encode` (the canonical text; strict as well).
- :mod:`limen_toolkit.serve`: ``serve``, the Tool protocol over
  standard input and output on asyncio (describe, calls multiplexed,
  cancel as ``asyncio.CancelledError``), with :class:`Context`,
  :class:`Failed`, :class:`NotRun` and :class:`Unknown`. The function
  ``serve`` is not re-exported here: ``limen_toolkit.serve`` stays the
  module (``import limen_toolkit.serve as serve`` then ``serve.serve``).
"""

from .codec import Limits, Refused, decode, encode
from .serve import (
    Context, Failed, Handler, ListingError, NotRun, StdoutIsTheProtocol, ToolkitLimits, Unknown,
    serve_async,
)
from .types import SchemaError, type_from_schema
from .values import (
    Duration, Err, FlowDict, FlowSet, HostToken, Instant, JsonValue, Ok,
    RecordValue, Some, Variant,
)

__version__ = "0.1.0"

__all__ = [
    "Context", "Duration", "Err", "Failed", "FlowDict", "FlowSet", "Handler", "HostToken",
    "Instant", "JsonValue", "Limits", "ListingError", "NotRun", "Ok", "RecordValue", "Refused",
    "SchemaError", "Some", "StdoutIsTheProtocol", "ToolkitLimits", "Unknown", "Variant",
    "__version__", "decode", "encode", "serve_async", "type_from_schema",
]
