package lane

import "strings"

// Owner values of Transactions.owner (spec 000 §5.1): exactly one party
// may move a row at any moment.
const (
	OwnerZC           = "ZC"
	OwnerVenueBOJ     = "VENUE:BOJ"
	OwnerChainDefault = "CHAIN:default"
)

// CycleOwner is the owner of a row snapshotted into DNS cycle id.
func CycleOwner(cycleID string) string { return "CYCLE:" + cycleID }

// ValidOwner reports whether o is 'ZC' or one of CYCLE:/VENUE:/CHAIN:
// followed by a non-empty id.
func ValidOwner(o string) bool {
	if o == OwnerZC {
		return true
	}
	for _, p := range []string{"CYCLE:", "VENUE:", "CHAIN:"} {
		if strings.HasPrefix(o, p) && len(o) > len(p) {
			return true
		}
	}
	return false
}

// The two DNS bulk handoff sites (spec 000 §5.2, handoffs #1 and #2) are
// the only code outside this package allowed to write Transactions.owner,
// because they move many rows in one statement. Issue 6 implements them
// at these paths (relative to the module root); the static ownership test
// whitelists exactly these files.
const (
	DNSKickSite   = "jobs/dns/kick.go"   // kick: 'ZC' -> 'CYCLE:<id>' with dns_cycle_id
	DNSSettleSite = "jobs/dns/settle.go" // settle / cycle cancel: 'CYCLE:<id>' -> 'ZC'
)
