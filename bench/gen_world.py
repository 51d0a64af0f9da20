#!/usr/bin/env python3
"""Prints a synthetic world as Cortex ingest JSONL (docs/ingest.md), for the benchmarks.

    bench/gen_world.py --entities 1000 --from 0 --to 1000 > world-1.jsonl     # first step
    bench/gen_world.py --from 1000 --to 10000 > world-2.jsonl                # next step

Message i (0-based) is a `message_received` episode, so ingesting it triages it into exactly
one decision: messages [0, N) in the store means N decisions. Everything is a pure function
of the index (no randomness between runs), so a world can be grown step by step.

- `--entities N` first prints N people `p{k}@org{k%40}.example` (the scheme
  `cortex-loadgen --scenario communicate|ingest` uses for its counterparties), tagged so that
  triage signals vary: every 20th `vip`, every 10th (from 7) `newsletter`, every 3rd
  `internal`, the rest `external`; and one 09:00-11:00 "deep work" calendar block per
  weekday over the span, so some messages land in a focus block.
- Messages spread `occurred_at` over the `--days` (default 180) before `--anchor`, at any
  hour; about 1 in 8 carries urgent language; 1 in 100 comes from a first contact (an
  address never seen before, which creates an entity), the rest from the N people.
- Every episode carries an `external_id` (`gw-{i}`), so re-sending a step is harmless.
"""

import argparse
import datetime as dt
import json
import sys

ORGS = 40


def person(k):
    return f"p{k}@org{k % ORGS}.example"


def tags(k):
    t = []
    if k % 20 == 0:
        t.append("vip")
    if k % 10 == 7:
        t.append("newsletter")
    t.append("internal" if k % 3 == 0 else "external")
    return t


def mix(i):
    """A 32-bit hash of i (Knuth multiplicative + xorshift), deterministic across runs."""
    h = (i * 2654435761 + 0x9E3779B9) & 0xFFFFFFFF
    h ^= h >> 15
    h = (h * 0x2C1B3C6D) & 0xFFFFFFFF
    h ^= h >> 12
    return h


SUBJECTS = ["Pilot cutover date", "Quarterly numbers", "Re: contract draft", "Lunch next week?",
            "Invoice 4471", "Hiring loop feedback", "Weekly digest", "Board deck v3",
            "Travel plans", "Can we move our 1:1?", "Server outage follow-up", "Roadmap review"]
URGENT = ["URGENT: need sign-off today", "ASAP: customer escalation", "Urgent - please call me"]


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--entities", type=int, default=0, help="people to print first (and blocks)")
    ap.add_argument("--people", type=int, default=1000, help="people messages come from")
    ap.add_argument("--from", dest="start", type=int, default=0, help="first message index")
    ap.add_argument("--to", dest="end", type=int, default=1000, help="one past the last index")
    ap.add_argument("--days", type=int, default=180, help="span of occurred_at, in days")
    ap.add_argument("--anchor", default="2026-11-01T00:00:00Z", help="end of the span (UTC)")
    a = ap.parse_args()

    anchor = dt.datetime.strptime(a.anchor, "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=dt.timezone.utc)
    span_s = a.days * 86400
    start = anchor - dt.timedelta(seconds=span_s)
    out = sys.stdout
    w = out.write

    for k in range(a.entities):
        w(json.dumps({"type": "entity", "name": f"Person {k}", "identifiers": [person(k)],
                      "tags": tags(k)}, separators=(",", ":")) + "\n")
    if a.entities:
        for d in range(a.days):
            day = start + dt.timedelta(days=d)
            if day.weekday() >= 5:
                continue
            b = day.replace(hour=9, minute=0, second=0)
            w(json.dumps({"type": "episode", "kind": "calendar_block",
                          "occurred_at": b.strftime("%Y-%m-%dT%H:%M:%SZ"),
                          "ends_at": (b + dt.timedelta(hours=2)).strftime("%Y-%m-%dT%H:%M:%SZ"),
                          "subject": "deep work", "summary": "Focus block: deep work",
                          "external_id": f"gw-block-{d}"}, separators=(",", ":")) + "\n")

    base = start.timestamp()
    for i in range(a.start, a.end):
        h = mix(i)
        t = dt.datetime.fromtimestamp(base + (h % span_s), dt.timezone.utc)
        h2 = mix(i ^ 0x5BD1E995)
        if h2 % 100 == 0:
            who = f"new{i}@first-contact.example"
        else:
            who = person(h2 % a.people)
        subject = URGENT[h2 % 3] if (h2 >> 8) % 8 == 0 else SUBJECTS[(h2 >> 4) % len(SUBJECTS)]
        # Hand-built (json.dumps per line would make this the slowest part of the bench).
        w('{"type":"episode","kind":"message_received","occurred_at":"%s","counterparty":"%s",'
          '"subject":"%s","summary":"%s wrote about %s (message %d).","thread":"thr-%d",'
          '"external_id":"gw-%d"}\n'
          % (t.strftime("%Y-%m-%dT%H:%M:%SZ"), who, subject, who.split("@")[0], subject.lower(),
             i, h2 % 5000, i))


if __name__ == "__main__":
    try:
        main()
    except BrokenPipeError:
        sys.exit(0)
