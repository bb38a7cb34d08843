package params

import (
	"testing"

	"github.com/zcgw/zcgw/coordinator/domainerr"
)

// FuzzParse: an operator's value either parses, and then reads back the
// same through Format, or is refused with INVALID_REQUEST; never a panic.
func FuzzParse(f *testing.F) {
	for _, s := range []string{"90s", "4h", "1h30m", "7200", "100000000", "-1", "1.5s", "none", "", "9223372036854775807", "2562047h47m16s", "09:00,12:00,15:00", "00:00,23:30", "9:00", "12:15"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		for _, d := range Defs() {
			v, err := d.Parse(s)
			if err != nil {
				if domainerr.Code(err) != "INVALID_REQUEST" {
					t.Fatalf("%s.Parse(%q): %v", d.Name, s, err)
				}
				continue
			}
			back, err := d.Parse(d.Format(v))
			if err != nil || back != v {
				t.Fatalf("%s: %q -> %d -> %q -> %d %v", d.Name, s, v, d.Format(v), back, err)
			}
		}
	})
}
