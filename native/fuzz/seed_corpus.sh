#!/usr/bin/env bash
# Seeds the fuzz_reader corpus (gitignored) with every public fixture and every capture this
# project made itself. Run from anywhere: bash native/fuzz/seed_corpus.sh
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "$here/../.." && pwd)"
corpus="$here/corpus/fuzz_reader"
mkdir -p "$corpus"
n=0
public="${STALLSCOPE_PUBLIC_FIXTURES:-$repo/../shared/fixtures/public}"
for dir in "$public" "$repo/fixtures"; do
    [ -d "$dir" ] || continue
    while IFS= read -r -d '' f; do
        case "$f" in *.md|*.txt|*.json) continue ;; esac
        # Flatten the path into a unique name so same-named files do not collide.
        name="$(basename "$dir")_$(echo "${f#"$dir"/}" | tr '/' '_')"
        cp -f "$f" "$corpus/$name"
        # A gzipped copy too, so the fuzzer starts inside the gzip path.
        gzip -9nc "$f" > "$corpus/$name.gz"
        n=$((n + 1))
    done < <(find "$dir" -type f -print0)
done
echo "seeded $n files into $corpus"
