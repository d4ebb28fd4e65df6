# make/ship.mk — placeholder; filled in by its owner.
