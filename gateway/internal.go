package gateway

import (
	"context"
	"net/http"

	"github.com/zcgw/zcgw/coordinator/domainerr"
)

func (s *Server) timeoutSweep(w http.ResponseWriter, r *http.Request) {
	res, err := s.cfg.Coordinator.TimeoutSweep(context.WithoutCancel(r.Context()))
	if err != nil {
		writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, res)
}

func (s *Server) jobs(w http.ResponseWriter, r *http.Request) {
	if s.cfg.Jobs == nil {
		writeError(w, r, domainerr.New("NOT_FOUND", "no job runner is configured", map[string]any{"job": r.PathValue("job")}))
		return
	}
	s.cfg.Jobs.ServeHTTP(w, r)
}
