# The Plummer timing driver and its tests.
