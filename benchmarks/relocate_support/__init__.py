"""Parts of benchmarks/relocate.py: the HMS data it builds and the contenders it times."""
