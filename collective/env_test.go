package collective

import (
	"strings"
	"testing"
	"time"
)

func TestConfigFromEnv(t *testing.T) {
	tests := []struct {
		env  map[string]string
		want Config
		err  string // substring of the error, "" for none
	}{
		{env: nil, want: Config{Size: 1, Addr: "127.0.0.1"}},
		{
			env:  map[string]string{"RANK": "1", "WORLD_SIZE": "4", "MASTER_ADDR": "10.0.0.2", "MASTER_PORT": "29500", "FASTER_COLLECTIVE_TIMEOUT": "90s"},
			want: Config{Rank: 1, Size: 4, Addr: "10.0.0.2", Port: 29500, Timeout: 90 * time.Second},
		},
		{env: map[string]string{"WORLD_SIZE": "2", "MASTER_PORT": "1234", "MASTER_ADDR": ""}, want: Config{Size: 2, Addr: "127.0.0.1", Port: 1234}},
		{env: map[string]string{"WORLD_SIZE": "2"}, err: "MASTER_PORT is not set"},
		{env: map[string]string{"WORLD_SIZE": "two"}, err: `WORLD_SIZE="two"`},
		{env: map[string]string{"WORLD_SIZE": "0"}, err: `WORLD_SIZE="0"`},
		{env: map[string]string{"RANK": "-1"}, err: `RANK="-1"`},
		{env: map[string]string{"RANK": "2", "WORLD_SIZE": "2", "MASTER_PORT": "1"}, err: `RANK="2": want less than WORLD_SIZE="2"`},
		{env: map[string]string{"MASTER_PORT": "70000"}, err: `MASTER_PORT="70000"`},
		{env: map[string]string{"MASTER_PORT": "x"}, err: `MASTER_PORT="x"`},
		{env: map[string]string{"FASTER_COLLECTIVE_TIMEOUT": "10"}, err: `FASTER_COLLECTIVE_TIMEOUT="10"`},
		{env: map[string]string{"FASTER_COLLECTIVE_TIMEOUT": "-1s"}, err: `FASTER_COLLECTIVE_TIMEOUT="-1s"`},
		// torchrun's worker environment (static rendezvous, two nodes of two).
		{
			env: map[string]string{"RANK": "3", "WORLD_SIZE": "4", "LOCAL_RANK": "1", "LOCAL_WORLD_SIZE": "2", "GROUP_RANK": "1",
				"MASTER_ADDR": "10.0.0.1", "MASTER_PORT": "29500", "TORCHELASTIC_USE_AGENT_STORE": "True", "TORCHELASTIC_RESTART_COUNT": "2"},
			want: Config{Rank: 3, Size: 4, Addr: "10.0.0.1", Port: 29500, AgentStore: true, StorePrefix: "/worker/attempt_2/",
				LocalRank: 1, LocalSize: 2, GroupRank: 1},
		},
		{env: map[string]string{"TORCHELASTIC_USE_AGENT_STORE": "False", "TORCHELASTIC_RESTART_COUNT": "1"}, want: Config{Size: 1, Addr: "127.0.0.1"}},
		{env: map[string]string{"TORCHELASTIC_USE_AGENT_STORE": "True"}, want: Config{Size: 1, Addr: "127.0.0.1", AgentStore: true, StorePrefix: "/worker/attempt_0/"}},
		{env: map[string]string{"TORCHELASTIC_USE_AGENT_STORE": "True", "TORCHELASTIC_RESTART_COUNT": "x"}, err: `TORCHELASTIC_RESTART_COUNT="x"`},
		{env: map[string]string{"LOCAL_WORLD_SIZE": "-2"}, err: `LOCAL_WORLD_SIZE="-2"`},
		{env: map[string]string{"LOCAL_RANK": "2", "LOCAL_WORLD_SIZE": "2"}, err: `LOCAL_RANK="2": want less than LOCAL_WORLD_SIZE="2"`},
	}
	for _, tt := range tests {
		got, err := configFrom(func(k string) (string, bool) { v, ok := tt.env[k]; return v, ok })
		if tt.err != "" {
			if err == nil || !strings.Contains(err.Error(), tt.err) {
				t.Errorf("%v: error %v, want one containing %q", tt.env, err, tt.err)
			}
			continue
		}
		if err != nil || got != tt.want {
			t.Errorf("%v: got %+v, %v; want %+v", tt.env, got, err, tt.want)
		}
	}
}

func TestFromEnv(t *testing.T) {
	t.Setenv("RANK", "0")
	t.Setenv("WORLD_SIZE", "3")
	t.Setenv("MASTER_ADDR", "localhost")
	t.Setenv("MASTER_PORT", "29400")
	t.Setenv("FASTER_COLLECTIVE_TIMEOUT", "")
	c, err := FromEnv()
	if err != nil {
		t.Fatal(err)
	}
	if want := (Config{Size: 3, Addr: "localhost", Port: 29400}); c != want {
		t.Fatalf("got %+v, want %+v", c, want)
	}
	if got := c.StoreAddr(); got != "localhost:29400" {
		t.Errorf("StoreAddr = %q", got)
	}
	if got := c.EffectiveTimeout(); got != DefaultTimeout {
		t.Errorf("EffectiveTimeout = %v", got)
	}
}

func TestConfigValidate(t *testing.T) {
	for _, c := range []Config{{Size: 0}, {Rank: 2, Size: 2}, {Rank: -1, Size: 1}, {Size: 1, Port: 1 << 20}, {Size: 1, Timeout: -1}} {
		if err := c.Validate(); err == nil {
			t.Errorf("%+v: Validate = nil", c)
		}
	}
	if err := (Config{Rank: 1, Size: 2, Port: 5}).Validate(); err != nil {
		t.Error(err)
	}
}
