// Host code in the static library beside the device code (nvcc -lib archives both).
int cross_host_answer() { return 42; }
