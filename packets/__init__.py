"""Reading captures: the native decoder's bindings (pcap, pcapng, gzip -> the packet table), the
packet table's schema, and the errors a capture can raise. Making captures (namespaces, the link
emulator, workloads, scenarios, tcpdump) is stallscope.capture."""
