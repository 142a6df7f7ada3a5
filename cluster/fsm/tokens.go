package fsm

import (
	"time"

	"hpc/cluster/api"
)

// Submission tokens make a submit idempotent. A client (sbatch, srun and
// salloc's allocation) sends a random token with its submission and, when
// the answer is lost (the leader died, the connection broke, the request
// timed out), sends the same submission again with the same token. The
// FSM remembers token -> job id for recent submissions: a Submit whose
// token it holds creates nothing and answers the first one's id, however
// many leaders the copies went through. An entry without a token (legacy
// entries, callers that send none) applies as before.
//
// What is remembered is bounded, deterministically, by the entries' own
// times: a token is forgotten once a later submission's time is TokenTTL
// past it, or when more than MaxTokens newer ones are held.

// TokenTTL is how long a token is remembered: far longer than a client
// retries (api.SubmitRetryWait).
const TokenTTL = time.Hour

// MaxTokens is the most tokens remembered (about 100 bytes each in a
// snapshot).
const MaxTokens = 50000

// SubmitToken is one remembered submission.
type SubmitToken struct {
	Token string `json:"t"`
	JobID uint64 `json:"id"`
	UID   uint32 `json:"uid"`
	// At is the submission's entry time (Unix nanoseconds).
	At int64 `json:"at"`
}

// SubmitTokens are the remembered submissions, oldest first. List is only
// appended to and cut from the front, never written in place, so a
// snapshot shares it (Snapshot copies the slice header: what Apply appends
// later lies beyond the snapshot's length). index is built from List when
// first needed (after a Restore) and is Apply's alone.
type SubmitTokens struct {
	List  []SubmitToken  `json:"list"`
	index map[string]int // token -> position in List + base
	base  int            // entries cut from List's front since index was built
}

// shared returns what a snapshot keeps of t: the list, without the index.
// Called with the FSM's lock held.
func (t *SubmitTokens) shared() *SubmitTokens {
	if t == nil {
		return nil
	}
	return &SubmitTokens{List: t.List}
}

// lookup returns the job id of token, if it is remembered.
func (t *SubmitTokens) lookup(token string) (SubmitToken, bool) {
	if t == nil || token == "" {
		return SubmitToken{}, false
	}
	t.build()
	i, ok := t.index[token]
	if !ok {
		return SubmitToken{}, false
	}
	return t.List[i-t.base], true
}

func (t *SubmitTokens) build() {
	if t.index != nil {
		return
	}
	t.index = make(map[string]int, len(t.List))
	t.base = 0
	for i, e := range t.List {
		t.index[e.Token] = i
	}
}

// forget drops the tokens that are TokenTTL older than now, and the oldest
// ones beyond room (MaxTokens less those about to be added).
func (t *SubmitTokens) forget(now time.Time, room int) {
	if t == nil {
		return
	}
	t.build()
	cut := now.Add(-TokenTTL).UnixNano()
	n := 0
	for n < len(t.List) && (t.List[n].At < cut || len(t.List)-n > room) {
		delete(t.index, t.List[n].Token)
		n++
	}
	if n > 0 {
		t.List = t.List[n:]
		t.base += n
	}
}

// remember records token for job id, submitted by uid at time at.
func (t *SubmitTokens) remember(token string, id uint64, uid uint32, at time.Time) {
	t.build()
	t.index[token] = len(t.List) + t.base
	t.List = append(t.List, SubmitToken{Token: token, JobID: id, UID: uid, At: at.UnixNano()})
}

// submitToken answers a Submit whose token is already remembered: the
// first submission's id, or an error if another user's submission holds
// the token. ok is false when the Submit is a new one. Called with f.mu
// held.
func (f *FSM) submitToken(op *Submit) (res Result, ok bool) {
	if op.Token == "" {
		return Result{}, false
	}
	f.st.Tokens.forget(op.Time, MaxTokens)
	e, ok := f.st.Tokens.lookup(op.Token)
	if !ok {
		return Result{}, false
	}
	if e.UID != op.Job.UID {
		return Result{Err: &api.Error{Message: api.ErrUnexpectedMessage, Detail: "submission token already used"}}, true
	}
	return Result{JobID: e.JobID}, true
}

// rememberToken records a new submission's token. Called with f.mu held.
func (f *FSM) rememberToken(op *Submit, id uint64) {
	if op.Token == "" {
		return
	}
	if f.st.Tokens == nil {
		f.st.Tokens = &SubmitTokens{}
	}
	f.st.Tokens.forget(op.Time, MaxTokens-1)
	f.st.Tokens.remember(op.Token, id, op.Job.UID, op.Time)
}
