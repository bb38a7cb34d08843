package dns_test

import (
	"fmt"

	"github.com/zcgw/zcgw/jobs/dns"
)

// Cycle ids carry the currency, the JST business date and the intraday
// sequence; a HOLD's public message id carries the date.
func ExampleCycleID() {
	id, _ := dns.CycleID("JPY", "2026-12-02", 2)
	ccy, date, seq, _ := dns.ParseCycleID(id)
	fmt.Println(id, ccy, date, seq)
	fmt.Println(dns.PublicMessageID(date))
	// Output:
	// DNS-JPY-20261202-02 JPY 2026-12-02 2
	// DNS_HOLD_2026-12-02
}
