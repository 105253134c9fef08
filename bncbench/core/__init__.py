"""The ground floor: errors, path names, losses, timing and numba's kernel cache, which every layer above
may use and which import nothing of bncbench's."""
