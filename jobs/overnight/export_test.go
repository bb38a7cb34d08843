package overnight

// WithCrash sets the test-only crash hook.
func WithCrash(cfg Config, fn func(point string) error) Config {
	cfg.crash = fn
	return cfg
}
