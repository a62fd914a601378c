"""Making captures: network namespaces, the user-space link emulator, workloads, labelled scenarios
and their ground truth, tcpdump and live capture. Reading them is stallscope.packets."""
