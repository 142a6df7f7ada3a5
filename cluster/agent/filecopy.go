package agent

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"hpc/cluster/api"
	"hpc/cluster/peer"
	"hpc/exec"
)

// Files copied into a job's nodes (sbcast) and out of them (sgather), on
// this node. The agent runs as root, so every file it opens, creates,
// renames or removes for a user it does with the user's file-system
// identity (exec.AsUser): the user's permissions decide, and what is
// created is the user's. A file sent here is written in pieces (each one
// signed request, so memory holds one piece) into a new hidden file next
// to its destination, created exclusively, and renamed into place at the
// end; a file read from here goes out in pieces the same way.

// FileRef names a file of a user on this node.
type FileRef struct {
	UID  uint32 `json:"uid"`
	GID  uint32 `json:"gid"`
	Path string `json:"path"` // absolute
}

// FileOpen starts a file sent here (POST /internal/file/open).
type FileOpen struct {
	FileRef
	Force bool `json:"force,omitempty"`
}

// FileToken names a file being sent here.
type FileToken struct {
	Token string `json:"token"`
}

// FileClose ends a file sent here (POST /internal/file/close): Commit
// renames it into place (with Info's mode and times if Preserve);
// otherwise it is dropped.
type FileClose struct {
	Token    string       `json:"token"`
	Commit   bool         `json:"commit"`
	Preserve bool         `json:"preserve,omitempty"`
	Info     api.FileInfo `json:"info"`
}

// FileRead asks for a piece of a file (POST /internal/file/read).
type FileRead struct {
	FileRef
	Offset int64 `json:"offset"`
	Len    int   `json:"len"`
}

// MaxFilePiece is the largest piece of a file one request carries.
const MaxFilePiece = 4 << 20

// putFile is a file being sent here.
type putFile struct {
	mu     sync.Mutex
	f      *os.File
	tmp    string
	ref    FileRef
	groups []uint32
	force  bool
	last   time.Time
}

// putIdle is how long a file being sent may wait for its next piece.
const putIdle = 10 * time.Minute

var puts = struct {
	mu sync.Mutex
	m  map[string]*putFile
}{m: map[string]*putFile{}}

// errnoText is an error as strerror words it ("File exists").
func errnoText(err error) string {
	var en syscall.Errno
	if errors.As(err, &en) {
		s := en.Error()
		return strings.ToUpper(s[:1]) + s[1:]
	}
	return err.Error()
}

// fileErr answers a file operation's failure with strerror's words.
func fileErr(w http.ResponseWriter, err error) {
	peer.WriteErr(w, http.StatusBadRequest, &api.Error{Message: errnoText(err)})
}

func checkRef(ref FileRef) error {
	if !filepath.IsAbs(ref.Path) || strings.HasSuffix(ref.Path, "/") || filepath.Clean(ref.Path) == "/" {
		return syscall.EINVAL
	}
	return nil
}

// handleFileOpen creates the hidden file a file sent here is written
// into, as its user, in the destination's directory. Without Force a
// destination that exists is refused.
func (ag *Agent) handleFileOpen(w http.ResponseWriter, r *http.Request) {
	var req FileOpen
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
		peer.WriteErr(w, http.StatusBadRequest, err)
		return
	}
	if err := checkRef(req.FileRef); err != nil {
		fileErr(w, err)
		return
	}
	dropIdlePuts()
	p := &putFile{ref: req.FileRef, groups: exec.GroupsOrPrimary(req.UID, req.GID), force: req.Force, last: time.Now()}
	var rnd [8]byte
	_, _ = rand.Read(rnd[:])
	token := hex.EncodeToString(rnd[:])
	dir, base := filepath.Split(filepath.Clean(req.Path))
	p.tmp = filepath.Join(dir, "."+base+".sbcast."+token)
	err := exec.AsUser(req.UID, req.GID, p.groups, func() error {
		if !req.Force {
			if _, err := os.Lstat(req.Path); err == nil {
				return syscall.EEXIST
			}
		}
		f, err := os.OpenFile(p.tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0o700)
		p.f = f
		return err
	})
	if err != nil {
		fileErr(w, err)
		return
	}
	puts.mu.Lock()
	puts.m[token] = p
	puts.mu.Unlock()
	peer.WriteJSON(w, FileToken{Token: token})
}

// dropIdlePuts drops the files being sent whose sender went away.
func dropIdlePuts() {
	puts.mu.Lock()
	var idle []*putFile
	for k, p := range puts.m {
		if time.Since(p.last) > putIdle {
			idle = append(idle, p)
			delete(puts.m, k)
		}
	}
	puts.mu.Unlock()
	for _, p := range idle {
		p.drop()
	}
}

// drop closes and removes the hidden file.
func (p *putFile) drop() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.f != nil {
		p.f.Close()
		p.f = nil
	}
	_ = exec.AsUser(p.ref.UID, p.ref.GID, p.groups, func() error { return os.Remove(p.tmp) })
}

func takePut(token string, remove bool) *putFile {
	puts.mu.Lock()
	defer puts.mu.Unlock()
	p := puts.m[token]
	if remove {
		delete(puts.m, token)
	}
	return p
}

// handleFileWrite writes a piece of a file sent here at its offset.
func (ag *Agent) handleFileWrite(w http.ResponseWriter, r *http.Request) {
	p := takePut(r.URL.Query().Get("token"), false)
	off, err := strconv.ParseInt(r.URL.Query().Get("off"), 10, 64)
	if p == nil || err != nil || off < 0 {
		peer.WriteErr(w, http.StatusBadRequest, &api.Error{Message: "Invalid file transfer"})
		return
	}
	b, err := io.ReadAll(r.Body)
	if err != nil {
		peer.WriteErr(w, http.StatusBadRequest, err)
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.f == nil {
		peer.WriteErr(w, http.StatusBadRequest, &api.Error{Message: "Invalid file transfer"})
		return
	}
	p.last = time.Now()
	if _, err := p.f.WriteAt(b, off); err != nil {
		fileErr(w, err)
		return
	}
	peer.WriteJSON(w, struct{}{})
}

// handleFileClose ends a file sent here: renamed into place as its user,
// or dropped.
func (ag *Agent) handleFileClose(w http.ResponseWriter, r *http.Request) {
	var req FileClose
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
		peer.WriteErr(w, http.StatusBadRequest, err)
		return
	}
	p := takePut(req.Token, true)
	if p == nil {
		peer.WriteErr(w, http.StatusBadRequest, &api.Error{Message: "Invalid file transfer"})
		return
	}
	if !req.Commit {
		p.drop()
		peer.WriteJSON(w, struct{}{})
		return
	}
	if err := p.commit(req); err != nil {
		p.drop()
		fileErr(w, err)
		return
	}
	peer.WriteJSON(w, struct{}{})
}

// commit sets the mode and times asked for and renames the hidden file
// into place, as the user.
func (p *putFile) commit(req FileClose) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	f := p.f
	if f == nil {
		return syscall.EBADF
	}
	if req.Preserve {
		if err := f.Chmod(os.FileMode(req.Info.Mode & 0o777)); err != nil {
			return err
		}
		ts := []unix.Timespec{unix.NsecToTimespec(req.Info.Atime.UnixNano()), unix.NsecToTimespec(req.Info.Mtime.UnixNano())}
		if err := unix.UtimesNanoAt(int(f.Fd()), "", ts, unix.AT_EMPTY_PATH); err != nil && !errors.Is(err, syscall.EINVAL) {
			return err
		}
	}
	if err := f.Close(); err != nil {
		p.f = nil
		return err
	}
	p.f = nil
	return exec.AsUser(p.ref.UID, p.ref.GID, p.groups, func() error {
		if !p.force {
			if _, err := os.Lstat(p.ref.Path); err == nil {
				return syscall.EEXIST
			}
		}
		return os.Rename(p.tmp, p.ref.Path)
	})
}

// handleFileStat answers a user's file's size, mode and times.
func (ag *Agent) handleFileStat(w http.ResponseWriter, r *http.Request) {
	var req FileRef
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
		peer.WriteErr(w, http.StatusBadRequest, err)
		return
	}
	if err := checkRef(req); err != nil {
		fileErr(w, err)
		return
	}
	var info api.FileInfo
	err := exec.AsUser(req.UID, req.GID, exec.GroupsOrPrimary(req.UID, req.GID), func() error {
		fi, err := os.Stat(req.Path)
		if err != nil {
			return err
		}
		if !fi.Mode().IsRegular() {
			return syscall.EISDIR
		}
		info = api.FileInfo{Size: fi.Size(), Mode: uint32(fi.Mode().Perm()), Mtime: fi.ModTime()}
		if st, ok := fi.Sys().(*syscall.Stat_t); ok {
			info.Atime = time.Unix(st.Atim.Sec, st.Atim.Nsec)
		}
		return nil
	})
	if err != nil {
		fileErr(w, err)
		return
	}
	peer.WriteJSON(w, info)
}

// handleFileRead answers a piece of a user's file, read as the user.
func (ag *Agent) handleFileRead(w http.ResponseWriter, r *http.Request) {
	var req FileRead
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
		peer.WriteErr(w, http.StatusBadRequest, err)
		return
	}
	if err := checkRef(req.FileRef); err != nil || req.Len <= 0 || req.Len > MaxFilePiece || req.Offset < 0 {
		fileErr(w, syscall.EINVAL)
		return
	}
	buf := make([]byte, req.Len)
	var n int
	err := exec.AsUser(req.UID, req.GID, exec.GroupsOrPrimary(req.UID, req.GID), func() error {
		f, err := os.Open(req.Path)
		if err != nil {
			return err
		}
		defer f.Close()
		n, err = f.ReadAt(buf, req.Offset)
		if errors.Is(err, io.EOF) {
			err = nil
		}
		return err
	})
	if err != nil {
		fileErr(w, err)
		return
	}
	w.Header().Set("Content-Type", "application/octet-stream")
	_, _ = w.Write(buf[:n])
}

// handleFileRemove removes a user's file, as the user (sgather without
// --keep).
func (ag *Agent) handleFileRemove(w http.ResponseWriter, r *http.Request) {
	var req FileRef
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
		peer.WriteErr(w, http.StatusBadRequest, err)
		return
	}
	if err := checkRef(req); err != nil {
		fileErr(w, err)
		return
	}
	err := exec.AsUser(req.UID, req.GID, exec.GroupsOrPrimary(req.UID, req.GID), func() error { return os.Remove(req.Path) })
	if err != nil {
		fileErr(w, fmt.Errorf("remove %s: %w", req.Path, err))
		return
	}
	peer.WriteJSON(w, struct{}{})
}

// OutputTail asks for the end of a job's output file on its batch host
// (POST /internal/job/output): at most Max bytes (api.MaxJobOutputTail
// when 0 or more), read as the job's owner.
type OutputTail struct {
	FileRef
	Max int `json:"max,omitempty"`
}

// OutputTailReply is the end of the file: its size and the bytes from
// Offset to it.
type OutputTailReply struct {
	Size   int64  `json:"size"`
	Offset int64  `json:"offset"`
	Data   []byte `json:"data"`
}

// handleOutputTail answers the end of a job's output file, for the
// dashboard's live tail. The file is opened with the owner's file-system
// identity, so a path the owner cannot read is refused as it would be to
// them; a symbolic link as the last component is refused (O_NOFOLLOW),
// and so is anything but a regular file (a FIFO is opened without
// waiting for a writer, and then refused).
func (ag *Agent) handleOutputTail(w http.ResponseWriter, r *http.Request) {
	var req OutputTail
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
		peer.WriteErr(w, http.StatusBadRequest, err)
		return
	}
	if err := checkRef(req.FileRef); err != nil {
		fileErr(w, err)
		return
	}
	limit := int64(req.Max)
	if limit <= 0 || limit > api.MaxJobOutputTail {
		limit = api.MaxJobOutputTail
	}
	var out OutputTailReply
	err := exec.AsUser(req.UID, req.GID, exec.GroupsOrPrimary(req.UID, req.GID), func() error {
		f, err := os.OpenFile(req.Path, os.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_NOCTTY|unix.O_CLOEXEC, 0)
		if err != nil {
			return err
		}
		defer f.Close()
		fi, err := f.Stat()
		if err != nil {
			return err
		}
		if !fi.Mode().IsRegular() {
			return errors.New("not a regular file")
		}
		out.Size = fi.Size()
		out.Offset = max(0, out.Size-limit)
		buf := make([]byte, out.Size-out.Offset)
		n, err := f.ReadAt(buf, out.Offset)
		if errors.Is(err, io.EOF) {
			err = nil // it shrank meanwhile (truncated by a requeue)
		}
		out.Data = buf[:n]
		return err
	})
	if err != nil {
		fileErr(w, err)
		return
	}
	peer.WriteJSON(w, out)
}
