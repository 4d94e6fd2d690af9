#!/usr/bin/env bash
# Regenerates README.md's operator table from a conformance run over Debian's ONNX test data.
set -euo pipefail
cd "$(dirname "$0")/.."
table=$(mktemp)
summary=$(build/tensorsched conformance --json --ops-markdown "$table" | tail -n 1)
{
  echo "$summary" | /usr/bin/python3 -c 'import json,sys; s=json.load(sys.stdin)["summary"]; print("All cases: {pass} pass, {fail} fail, {unsupported} unsupported, {error} error.".format(**s)); print()'
  cat "$table"
} > "$table.md"
/usr/bin/python3 - "$table.md" <<'PY'
import re, sys
table = open(sys.argv[1]).read()
readme = open("README.md").read()
readme = re.sub(r"<!-- op-table:begin -->.*<!-- op-table:end -->",
                "<!-- op-table:begin -->\n" + table + "<!-- op-table:end -->", readme, flags=re.S)
open("README.md", "w").write(readme)
PY
rm -f "$table" "$table.md"
echo "README.md: $summary"
