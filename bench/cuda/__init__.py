"""The scorer's prepared CUDA run: bench/cuda/device.sh (on the GPU machine), prepare.sh (here)."""
