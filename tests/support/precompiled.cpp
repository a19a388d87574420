// The object that owns the test programs' precompiled header (tests/CMakeLists.txt).
