#!/usr/bin/env bash
# Installs Weft into a temporary prefix, then builds and runs examples/hello against it twice:
# through the CMake package (find_package(weft CONFIG)) and through pkg-config.
set -euxo pipefail
build=$1
src=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cmake --install "$build" --prefix "$tmp/prefix" >/dev/null
test -f "$tmp/prefix/include/weft/weft.h"
soname=$(readelf -d "$tmp/prefix/lib/libweft.so" | sed -n 's/.*SONAME.*\[\(.*\)\]/\1/p')
echo "installed libweft.so with SONAME $soname"
[ "$soname" = "libweft.so.0" ]

cmake -S "$src/examples/hello" -B "$tmp/cmake-build" -DCMAKE_PREFIX_PATH="$tmp/prefix" >/dev/null
cmake --build "$tmp/cmake-build" >/dev/null
LD_LIBRARY_PATH="$tmp/prefix/lib" "$tmp/cmake-build/hello"

export PKG_CONFIG_PATH="$tmp/prefix/lib/pkgconfig"
cc "$src/examples/hello/hello.c" $(pkg-config --cflags --libs weft) -o "$tmp/hello-pc"
LD_LIBRARY_PATH="$tmp/prefix/lib" "$tmp/hello-pc"
