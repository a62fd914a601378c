"""The reference TCP host: one connection per host, personalities of historical stacks.

Modules: state (RFC state enum, timer sum type), personality (per-stack parameters), rules (pure
decisions: sosend chunking, tcp_output order, window updates, MSS, RTO grid), delack (delayed-ACK
policies), congestion (Tahoe/Reno/NewReno), costs (host CPU model), stalls (ground truth), host.
"""
