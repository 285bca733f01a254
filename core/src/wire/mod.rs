//! Wire protocol machines, one module per protocol.
