"""The reference TCP simulator (run in the native core, native/src/sim/): bulk runs, naglemark, ground truth, reproductions."""
