import sys, collections
rows=[]
for l in open(sys.argv[1]):
    f=l.split()
    if len(f)<7 or f[1]!=sys.argv[3] or f[4] not in ('6','7','8','10'): continue
    rows.append((float(f[0]), int(f[2]), int(f[6])))
arr=collections.defaultdict(list)
for t,sp,p in rows: arr[p].append(t)
naks=[]
for l in open(sys.argv[2]):
    t,sp,psn,syn=l.split()
    if syn=='96': naks.append((float(t),int(psn)))
before=0; after=0; never=0; dt=[]
for t,p in naks:
    a=arr.get(p,[])
    if not a: never+=1; continue
    if a[0] < t:
        before+=1; dt.append((t-a[0])*1e6)
    else: after+=1
print("naks",len(naks),"psn arrived at h3 before the NAK:",before,"after:",after,"never:",never)
dt.sort()
if dt: print("NAK sent after the PSN's arrival at h3 by (us): min %.0f p10 %.0f med %.0f p90 %.0f max %.0f"%(dt[0],dt[len(dt)//10],dt[len(dt)//2],dt[9*len(dt)//10],dt[-1]))
for t,p in naks[:8]:
    print("nak t=%.6f psn %d arrivals %s"%(t,p,[round(x,6) for x in arr.get(p,[])]))
