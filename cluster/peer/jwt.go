package peer

import (
	"crypto/sha256"
	"errors"
	"fmt"
	"os/user"
	"strconv"
	"time"

	"github.com/golang-jwt/jwt/v5"
)

// Slurm's JWT scheme (auth/jwt): an HS256 token whose "sun" claim names
// the user, with "iat" and "exp". Slurm signs with jwt_hs256.key; hpc with
// a key derived from the cluster key, so every node makes and checks the
// same tokens and none is the key that signs node-to-node requests.

// jwtKey derives the token key from the cluster key.
func jwtKey(key []byte) []byte {
	sum := sha256.Sum256(append([]byte("hpc jwt\x00"), key...))
	return sum[:]
}

// DefaultTokenLife is scontrol token's lifespan when none is asked for.
const DefaultTokenLife = 1800 * time.Second

// slurmClaims are the claims Slurm's tokens carry.
type slurmClaims struct {
	User string `json:"sun"`
	jwt.RegisteredClaims
}

// MakeToken is a token for user, valid from now for life.
func MakeToken(key []byte, user string, now time.Time, life time.Duration) (string, error) {
	if user == "" {
		return "", errors.New("a token needs a user name")
	}
	c := slurmClaims{User: user, RegisteredClaims: jwt.RegisteredClaims{
		IssuedAt:  jwt.NewNumericDate(now),
		ExpiresAt: jwt.NewNumericDate(now.Add(life)),
	}}
	return jwt.NewWithClaims(jwt.SigningMethodHS256, c).SignedString(jwtKey(key))
}

// VerifyToken checks a token at now and returns the user it names.
func VerifyToken(key []byte, tok string, now time.Time) (string, error) {
	var c slurmClaims
	_, err := jwt.ParseWithClaims(tok, &c, func(*jwt.Token) (any, error) { return jwtKey(key), nil },
		jwt.WithValidMethods([]string{jwt.SigningMethodHS256.Alg()}),
		jwt.WithExpirationRequired(),
		jwt.WithTimeFunc(func() time.Time { return now }))
	switch {
	case errors.Is(err, jwt.ErrTokenExpired):
		return "", errors.New("token expired")
	case err != nil:
		return "", fmt.Errorf("invalid token: %w", err)
	case c.User == "":
		return "", errors.New("invalid token: no user name (sun)")
	}
	return c.User, nil
}

// LookupUser is the identity of a user named in a token: uid and primary
// group from the machine's user database.
func LookupUser(name string) (Identity, error) {
	u, err := user.Lookup(name)
	if err != nil {
		return Identity{}, fmt.Errorf("unknown user %q", name)
	}
	uid, err1 := strconv.ParseUint(u.Uid, 10, 32)
	gid, err2 := strconv.ParseUint(u.Gid, 10, 32)
	if err1 != nil || err2 != nil {
		return Identity{}, fmt.Errorf("user %q has no numeric uid/gid", name)
	}
	return LookupIdentity(uint32(uid), uint32(gid)), nil
}
