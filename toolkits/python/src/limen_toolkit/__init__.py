"""limen's Python toolkit: write a Flow Tool in Python.

The toolkit converts values under the value encoding of
flow-host-boundary.txt (§ Value encoding, § Toolkits): ``Int`` is a Python
``int`` of any size, ``Decimal`` a ``decimal.Decimal`` (never a float),
``Instant`` and ``Duration`` exact. It uses the standard library only.
"""

__version__ = "0.1.0"

__all__ = ["__version__"]
