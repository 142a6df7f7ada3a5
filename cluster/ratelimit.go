package cluster

import (
	"net/http"
	"sync"
	"time"

	"golang.org/x/time/rate"

	"hpc/cluster/api"
	"hpc/cluster/peer"
)

// submitLimiter holds each user's submissions to a rate, as Slurm's
// SlurmctldParameters rl_* (a token bucket per user) does, so that one
// user's loop of sbatch cannot crowd out everyone else or flood the Raft
// log. Root is not limited (nor is SlurmUser in Slurm). Buckets of users
// who stopped submitting are dropped now and then.
type submitLimiter struct {
	mu      sync.Mutex
	burst   int
	rate    rate.Limit
	users   map[uint32]*rate.Limiter
	cleaned time.Time
}

func newSubmitLimiter(burst, perSecond int) *submitLimiter {
	return &submitLimiter{burst: burst, rate: rate.Limit(perSecond), users: map[uint32]*rate.Limiter{}}
}

// allow takes a token of uid's bucket, or says that uid must slow down.
func (l *submitLimiter) allow(uid uint32, now time.Time) bool {
	if uid == 0 {
		return true
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if now.Sub(l.cleaned) > time.Minute {
		for u, b := range l.users {
			if b.TokensAt(now) >= float64(l.burst) {
				delete(l.users, u) // full again: as good as new
			}
		}
		l.cleaned = now
	}
	b := l.users[uid]
	if b == nil {
		b = rate.NewLimiter(l.rate, l.burst)
		l.users[uid] = b
	}
	return b.AllowN(now, 1)
}

// rateLimited wraps a leader route that creates jobs: past the caller's
// rate it answers Slurm's back-off error, and nothing else slows down.
func (d *Daemon) rateLimited(h handler) handler {
	return func(w http.ResponseWriter, r *http.Request, id peer.Identity, body []byte) {
		if !d.submits.allow(id.UID, time.Now()) {
			peer.WriteErr(w, http.StatusTooManyRequests, &api.Error{Message: api.ErrRateLimit})
			return
		}
		h(w, r, id, body)
	}
}
