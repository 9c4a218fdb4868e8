B=/ptshare/bench
for r in 1 2 3; do
  $B/aim9 -m fork -d 2
  $B/aim9 -m exec -d 2 -e $B/tiny
done
$B/forkbench -s 0 -m fork-exit -r 10 -t never -H off -w -e $B/tiny
$B/forkbench -s 0 -m fork-exec -r 10 -t never -H off -w -e $B/tiny
