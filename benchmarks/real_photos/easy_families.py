"""easy-VQA runs side by side by question family (which shape, shape present, what colour, colour present).

    python benchmarks/real_photos/easy_families.py RUN_DIR [RUN_DIR ...]

Scores as stored in each run's results.jsonl (exact match), over the questions every run finished.
A RUN_DIR may also be a run's summary (summaries/*.json, see summarize_run.py).
"""
import json, re, sys
from collections import defaultdict
def cat(q):
    if re.search(r'colou?r of|what colou?r', q): return 'what colour'
    if q.startswith('what'): return 'what shape'
    if re.search(r'(circle|rectangle|triangle)', q): return 'shape present'
    return 'colour present'
def load(r):
    if r.endswith('.json'):  # a summary: its questions as records
        return {q['id']: {'query': q['q'], 'score': q['score']} for q in json.load(open(r))['questions']}
    return {json.loads(l)['id']: json.loads(l) for l in open(f'{r}/results.jsonl')}
runs = sys.argv[1:]
if not runs or runs[0] in ('-h', '--help'):
    print(__doc__, file=sys.stdout if runs else sys.stderr)
    sys.exit(0 if runs else 2)
data = [load(r) for r in runs]
ids = [i for i in data[0] if all(i in d for d in data)]
agg = defaultdict(lambda: [0] * (len(runs) + 1))
for i in ids:
    c = cat(data[0][i]['query'])
    agg[c][0] += 1
    for k, d in enumerate(data):
        agg[c][k + 1] += d[i]['score']
print(f"{len(ids)} questions;", ' | '.join(runs))
for c, v in sorted(agg.items()):
    print(f"  {c:<15} n={v[0]:<4}", ' | '.join(f"{100 * x / v[0]:5.1f}%" for x in v[1:]))
tot = [sum(d[i]['score'] for i in ids) / len(ids) * 100 for d in data]
print('  all', ' | '.join(f'{t:.1f}%' for t in tot))
