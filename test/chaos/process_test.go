package chaos_test

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"

	"github.com/zcgw/zcgw/coordinator/failpoint"
	"github.com/zcgw/zcgw/test/internal/proc"
)

// nodeLife is one life of `zcgw serve` on the run's data folder.
type nodeLife struct {
	*proc.Proc
	n int // life number, from 1
}

// startNode starts `zcgw serve --data dir --addr addr`, with the given
// failpoints armed ("" none). The process's stdout is watched for the
// serving line; its stderr goes to logs/life-N.log beside the data folder.
func startNode(dir, logDir, addr string, n int, points string, fpSeed uint64) (*nodeLife, error) {
	c := proc.Config{Bin: zcgwBin, Args: []string{"serve", "--data", dir, "--addr", addr},
		Log: filepath.Join(logDir, fmt.Sprintf("life-%03d.log", n)), Ready: "zcgw serving on ",
		Drop: []string{failpoint.EnvPoints, failpoint.EnvSeed, "ZCGW_DATA"}}
	if points != "" {
		c.Env = []string{failpoint.EnvPoints + "=" + points, fmt.Sprintf("%s=%d", failpoint.EnvSeed, fpSeed)}
	}
	p, err := proc.Start(c)
	if err != nil {
		return nil, err
	}
	return &nodeLife{Proc: p, n: n}, nil
}

var fpLine = regexp.MustCompile(`failpoint: kill at (\S+) hit (\d+)`)

// firedPoint is the failpoint line the life wrote before it died ("" none).
func (p *nodeLife) firedPoint() string {
	b, _ := os.ReadFile(p.Log)
	if m := fpLine.FindSubmatch(b); m != nil {
		return string(m[1]) + " hit " + string(m[2])
	}
	return ""
}
