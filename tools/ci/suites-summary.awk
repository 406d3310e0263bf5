# Summarises a `go test -v ./suites/... -args -ginkgo.v` log for the end of
# the output, where CI keeps it: each package's result, every failed spec,
# then the message of each failure (Ginkgo's "[FAILED] ..." block, up to its
# "In [node] at:" line), which says why: a cluster that did not start names
# its phase and where its logs are kept.
{ gsub(/\x1b\[[0-9;]*m/, "") }
/^ *\[FAILED\] in \[/ { next }
inblock {
	block = block "\n" $0
	if ($0 ~ /^ *In \[[^]]*\] at:/ || ++lines >= 40) { if (!seenBlock[block]++) blocks[++nblocks] = block; inblock = 0 }
	next
}
/^ *\[(FAILED|PANICKED|TIMEDOUT|INTERRUPTED)\] / && $0 !~ /^ *\[[A-Z]+\] \[/ { inblock = 1; lines = 0; block = $0; next }
# Specs a label filter left out are counted here (Ginkgo's "Ran 3 of 5 Specs").
/^Ran [0-9]+ of [0-9]+ Specs/ { results[++nresults] = $0; next }
/^(ok|FAIL|--- FAIL|panic:)/ || /^ *\[(FAIL|PANICKED|TIMEDOUT|INTERRUPTED)\]/ { if (!seen[$0]++) results[++nresults] = $0 }
END {
	for (i = 1; i <= nresults; i++) print results[i]
	if (nblocks == 0) exit
	print ""
	print "why (each failure's message):"
	for (i = 1; i <= nblocks && i <= 20; i++) print blocks[i]
	if (nblocks > 20) print "... " nblocks - 20 " more in the full log"
}
