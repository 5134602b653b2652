import sys, collections
src = sys.argv[2]
rows=[]
for l in open(sys.argv[1]):
    f=l.split()
    if len(f)<7 or f[1]!=src or f[4] not in ('6','7','8','10'): continue
    rows.append((float(f[0]), int(f[2]), int(f[6])))
seen=collections.Counter(p for _,_,p in rows)
print("packets",len(rows),"distinct psn",len(seen),"dups",sum(c-1 for c in seen.values()))
mx=-1; late=0; lateby=[]; first={}
per_port_mx={}; port_inv=0
hist=collections.Counter()
for i,(t,sp,p) in enumerate(rows):
    if p in first: continue  # a copy
    first[p]=(t,sp,i)
    if p<mx:
        late+=1
    mx=max(mx,p)
    pm=per_port_mx.get(sp,-1)
    if p<pm: port_inv+=1
    per_port_mx[sp]=max(pm,p)
print("first copies arriving below max psn:",late,"per-port inversions:",port_inv)
# for each psn that came more than once: how late was the first copy relative to its successor psn
dups=[p for p,c in seen.items() if c>1]
d=[]
for p in sorted(dups):
    t,sp,i=first[p]
    # when did p+1 arrive first?
    if p+1 in first:
        d.append((first[p+1][0]-t)*1e6)
print("dup psns",len(dups))
# arrival gaps: run structure: count consecutive same-port runs
runs=[]; cur=None; n=0
for t,sp,p in rows:
    if sp!=cur:
        if cur is not None: runs.append(n)
        cur=sp; n=0
    n+=1
runs.append(n)
print("runs",len(runs),"median run len",sorted(runs)[len(runs)//2], "ports", sorted(per_port_mx))
# print first few dups with context
for p in sorted(dups)[:5]:
    idx=[i for i,(t,sp,q) in enumerate(rows) if q==p]
    print("psn",p,"arrivals at idx",idx, [(round(rows[i][0],6),rows[i][1]) for i in idx])
    i=idx[0]
    for j in range(max(0,i-3), min(len(rows), idx[-1]+2)):
        if j in idx or abs(j-i)<=3 or abs(j-idx[-1])<=1: print("   ",j,rows[j])
