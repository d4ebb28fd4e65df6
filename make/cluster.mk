# make/cluster.mk — placeholder; filled in by its owner.
