package failpoint

import (
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
)

// fake replaces the kill with a record of it, for the duration of a test.
func fake(t *testing.T, spec, seed string) *[]string {
	t.Helper()
	var fired []string
	old := killing
	killing = func(name string, hit int64) { fired = append(fired, name+"#"+itoa(hit)) }
	arm(spec, seed)
	t.Cleanup(func() { killing = old; arm("", "") })
	return &fired
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }

func TestUnarmedHitDoesNothing(t *testing.T) {
	fired := fake(t, "", "")
	for i := 0; i < 1000; i++ {
		Hit("adapter.after-record")
	}
	if len(*fired) != 0 || armed != nil {
		t.Fatalf("unarmed: fired %v, armed %v", *fired, armed)
	}
}

func TestKillAtNthHit(t *testing.T) {
	fired := fake(t, "a=kill#3; b=kill#1", "")
	Hit("a")
	Hit("c") // not armed
	Hit("a")
	if len(*fired) != 0 {
		t.Fatalf("fired before the 3rd hit: %v", *fired)
	}
	Hit("a")
	Hit("a") // fires once only
	Hit("b")
	if got := strings.Join(*fired, ","); got != "a#3,b#1" {
		t.Fatalf("fired %s, want a#3,b#1", got)
	}
}

func TestKillWithProbabilityIsSeeded(t *testing.T) {
	first := func(seed string) int {
		fired := fake(t, "p=kill@0.05", seed)
		for i := 1; i <= 10000; i++ {
			Hit("p")
			if len(*fired) > 0 {
				return i
			}
		}
		return 0
	}
	a, b, c := first("7"), first("7"), first("8")
	if a == 0 || a != b {
		t.Fatalf("seed 7 fired at hit %d then %d: want the same hit twice", a, b)
	}
	if c == a {
		t.Logf("seeds 7 and 8 both fired at hit %d (possible, unlikely)", a)
	}
}

func TestParseErrorsNameTheEntry(t *testing.T) {
	for _, tc := range []struct{ spec, want string }{
		{"a", `entry 1 "a": want name=kill@P`},
		{"a=kill@0", `entry 1 "a=kill@0": probability must be in (0, 1]`},
		{"a=kill@1.5", "probability must be in (0, 1]"},
		{"a=kill#0", `hit number must be a positive integer`},
		{"a=kill#1;b=sleep", `entry 2 "b=sleep": unknown action "sleep"`},
		{"a=kill#1;a=kill#2", "point a armed twice"},
		{";", "arms no point"},
	} {
		_, err := Parse(tc.spec)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Parse(%q) = %v, want an error containing %q", tc.spec, err, tc.want)
		}
	}
}

func TestMalformedArmingPanicsAtFirstHit(t *testing.T) {
	fake(t, "a=boom", "")
	defer func() {
		if p := recover(); p == nil || !strings.Contains(p.(error).Error(), "unknown action") {
			t.Fatalf("recovered %v, want the parse error", p)
		}
	}()
	Hit("anything")
}

// TestKillIsSIGKILL runs this test binary as a child armed through the
// environment and checks that it died of SIGKILL at the point, after
// naming it on stderr.
func TestKillIsSIGKILL(t *testing.T) {
	if os.Getenv("FAILPOINT_CHILD") == "1" {
		Hit("child.point")
		Hit("child.point")
		os.Exit(0) // not reached: the 2nd hit kills
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestKillIsSIGKILL$")
	cmd.Env = append(os.Environ(), "FAILPOINT_CHILD=1", EnvPoints+"=child.point=kill#2", EnvSeed+"=1")
	out, err := cmd.CombinedOutput()
	ee, ok := err.(*exec.ExitError)
	if !ok || ee.ExitCode() != -1 || !strings.Contains(ee.String(), "killed") {
		t.Fatalf("child: %v, want death by SIGKILL\n%s", err, out)
	}
	if !strings.Contains(string(out), "failpoint: kill at child.point hit 2") {
		t.Fatalf("child's output does not name the point:\n%s", out)
	}
}

// FuzzParse: any ZCGW_FAILPOINTS value either parses into points with a
// valid action or is refused with an error naming the variable; never a
// panic.
func FuzzParse(f *testing.F) {
	for _, s := range []string{"a=kill@0.5", "a=kill#3;b=kill@1", "x", "=", ";;", "a=kill@NaN", "a=kill#-1"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, spec string) {
		set, err := Parse(spec)
		if err != nil {
			if !strings.Contains(err.Error(), EnvPoints) {
				t.Fatalf("Parse(%q) error %q does not name %s", spec, err, EnvPoints)
			}
			return
		}
		for name, a := range set {
			if name == "" || (a.At < 1 && !(a.Prob > 0 && a.Prob <= 1)) {
				t.Fatalf("Parse(%q) armed %q with %+v", spec, name, *a)
			}
		}
	})
}
