#!/usr/bin/env bash
# What #[derive(Versioned)] adds to a crate's build (BENCHMARKS.md, claim 11).
#
#   bench/compile-time.sh [MODELS=50] [COLUMNS=8] [REPEAT=5] [DIR=$TMPDIR/bench-compile]
#
# Generates a workspace of two crates of the same MODELS models of COLUMNS columns (the
# key and the token included), Diesel's derives alone (gen-plain) and with
# #[derive(Versioned)] beside them (gen-versioned); builds each REPEAT times clean and
# after an edit of one model, alternating which crate goes first, debug profile; prints
# the times, the ratio of the medians and the per-repetition ratios versioned / plain
# with their median and 95 % bootstrap interval (the bench's `interval` subcommand);
# then the expanded code per model (rustc -Zunpretty=expanded under RUSTC_BOOTSTRAP=1:
# non-blank lines, and tokens counted as words, string literals and other characters).
# Cargo runs offline with this workspace's Cargo.lock. It asserts nothing.
set -euo pipefail
models=${1:-50} columns=${2:-8} repeat=${3:-5}
dir=${4:-${TMPDIR:-/tmp}/bench-compile}
root=$(cd "$(dirname "$0")/.." && pwd)
((columns >= 3)) || { echo "COLUMNS: at least 3 (the key, a value, the token)" >&2; exit 1; }
crates=(gen-plain gen-versioned)
types=("Text String" "Integer i32" "Nullable<Text> Option<String>")

# Writes $1 from stdin unless unchanged, so that a second run builds incrementally.
put() { local text; text=$(cat); mkdir -p "$(dirname "$1")"
  [[ -f $1 && $(cat "$1") == "$text" ]] || printf '%s\n' "$text" >"$1"; }

put "$dir/Cargo.toml" <<TOML
[workspace]
members = ["gen-plain", "gen-versioned"]
resolver = "2"

[workspace.dependencies]
diesel = { version = "2", default-features = false, features = ["sqlite"] }
diesel-occ = { path = "$root/diesel-occ", default-features = false, features = ["derive", "sqlite"] }
TOML
put "$dir/Cargo.lock" <"$root/Cargo.lock"
for name in "${crates[@]}"; do
  put "$dir/$name/Cargo.toml" <<TOML
[package]
name = "$name"
version = "0.1.0"
edition = "2021"
publish = false

[dependencies]
diesel.workspace = true
diesel-occ.workspace = true
TOML
  derive='' token=''
  [[ $name == gen-versioned ]] && derive=', diesel_occ::Versioned' token='    #[occ(version)]'
  lib=$'#![allow(dead_code)]\n\npub mod schema;' schema=''
  for ((m = 0; m < models; m++)); do
    lib+=$'\n'"pub mod m$m;"
    schema+="diesel::table! {"$'\n'"    t$m (id) {"$'\n'"        id -> Integer,"$'\n'
    fields=''
    for ((c = 0; c < columns - 2; c++)); do
      read -r sql rust <<<"${types[c % 3]}"
      schema+="        c$c -> $sql,"$'\n'
      fields+="    pub c$c: $rust,"$'\n'
    done
    schema+=$'        version -> Integer,\n    }\n}\n'
    put "$dir/$name/src/m$m.rs" <<RUST
use diesel::prelude::*;

#[derive(Debug, Clone, Queryable, Selectable, Identifiable, Insertable$derive)]
#[diesel(table_name = crate::schema::t$m)]
pub struct Model$m {
    pub id: i32,
${fields}${token:+$token
}    pub version: i32,
}
RUST
  done
  put "$dir/$name/src/schema.rs" <<<"$schema"
  put "$dir/$name/src/lib.rs" <<<"$lib"
done

cd "$dir"
build() { cargo build --offline -q -p "$1"; }
seconds() { local t0; t0=$(date +%s.%N); "$@"; awk -v a="$(date +%s.%N)" -v b="$t0" 'BEGIN {printf "%.2f", a - b}'; }
echo "-- compile time: $models models x $columns columns, crates in $dir"
# The dependencies, once: every timed build compiles the generated crate alone.
for name in "${crates[@]}"; do build "$name"; done
declare -A times
for ((r = 0; r < repeat; r++)); do
  order=(0 1); ((r % 2)) && order=(1 0)
  for i in "${order[@]}"; do
    cargo clean --offline -q -p "${crates[i]}"
    times[clean,$i]+=" $(seconds build "${crates[i]}")"
  done
  for i in "${order[@]}"; do
    file=${crates[i]}/src/m0.rs
    grep -v '^// edit ' "$file" >"$file.new" && echo "// edit $r" >>"$file.new" && mv "$file.new" "$file"
    times[incremental,$i]+=" $(seconds build "${crates[i]}")"
  done
done
median() { tr ' ' '\n' | grep . | sort -g | awk '{v[NR] = $1} END {print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2}'; }
for kind in clean incremental; do
  what="clean build"; [[ $kind == incremental ]] && what="incremental rebuild after editing one model"
  plain=${times[$kind,0]} versioned=${times[$kind,1]}
  printf '%s: gen-plain%s s (median %.2f s); gen-versioned%s s (median %.2f s)\n' "$what" \
    "$plain" "$(median <<<"$plain")" "$versioned" "$(median <<<"$versioned")"
  awk -v w="$what" -v v="$(median <<<"$versioned")" -v p="$(median <<<"$plain")" \
    'BEGIN {printf "%s: versioned / plain = %.3f (ratio of the medians)\n", w, v / p}'
  ratios=$(paste <(tr ' ' '\n' <<<"$versioned" | grep .) <(tr ' ' '\n' <<<"$plain" | grep .) | awk '{printf "%s ", $1 / $2}')
  # shellcheck disable=SC2086 # one argument per ratio
  echo "$what: per repetition, versioned / plain: $(cd "$root" && cargo run -q -p diesel-occ-bench -- interval $ratios)"
done

# Last: RUSTC_BOOTSTRAP changes the dependencies' fingerprints (the untimed builds above
# compile them again on the next run).
count() {
  RUSTC_BOOTSTRAP=1 cargo rustc --offline -q -p "$1" --lib -- -Zunpretty=expanded >"$dir/$1.expanded"
  echo "$(grep -c '[^[:space:]]' "$dir/$1.expanded") $(grep -oE '[[:alnum:]_]+|"([^"\\]|\\.)*"|[^[:space:]]' "$dir/$1.expanded" | wc -l)"
}
read -r plain_lines plain_tokens <<<"$(count gen-plain)"
read -r lines tokens <<<"$(count gen-versioned)"
echo "expanded code (rustc -Zunpretty=expanded, non-blank lines / tokens): gen-plain $plain_lines / $plain_tokens, gen-versioned $lines / $tokens"
awk -v m="$models" -v pl="$plain_lines" -v pt="$plain_tokens" -v l="$lines" -v t="$tokens" 'BEGIN {
  printf "expanded code per model: gen-plain (its table! and Diesel'"'"'s derives) %.0f lines / %.0f tokens; #[derive(Versioned)] adds %.0f lines / %.0f tokens\n", pl / m, pt / m, (l - pl) / m, (t - pt) / m }'
