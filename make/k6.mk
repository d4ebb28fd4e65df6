# make/k6.mk — placeholder; filled in by its owner.
