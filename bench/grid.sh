#!/bin/bash
# usage: grid.sh FILES BASE "extra1" "extra2" ...   (runs 2 at a time, prints SUMMARY lines)
cd /work/tune
F=$1; B=$2; shift 2
run() { .venv/bin/python bench/ent.py $F "{$B,$1}" "$1" | grep SUMMARY | sed "s/{.*//"; }
while [ $# -gt 0 ]; do
  run "$1" & 
  if [ $# -gt 1 ]; then run "$2" & fi
  wait; shift 2 2>/dev/null || shift
done
