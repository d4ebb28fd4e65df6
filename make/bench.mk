# make/bench.mk — placeholder; filled in by its owner.
