#!/bin/sh
# Turns files into a C table {name, bytes, length} so profiles and the schema ship inside the binary.
# Usage: embed.sh FILE... > embedded.c   (the name is the path as given)
echo '#include <stddef.h>'
echo '#include "util/embedded.h"'
i=0
for f in "$@"; do
  echo "static const unsigned char vb_embed_$i[] = {"
  xxd -i < "$f"
  echo ", 0x00 };"
  i=$((i + 1))
done
echo "const vb_embedded_file vb_embedded_files[] = {"
i=0
for f in "$@"; do
  sz=$(wc -c < "$f")
  echo "  { \"$f\", (const char *)vb_embed_$i, $sz },"
  i=$((i + 1))
done
echo "  { NULL, NULL, 0 } };"
