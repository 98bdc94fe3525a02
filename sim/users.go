package sim

import (
	"cmp"
	"crypto/md5"
	"crypto/sha256"
	"crypto/sha512"
	"crypto/subtle"
	"encoding/base64"
	"errors"
	"fmt"
	"hash"
	"io"
	"maps"
	"net/netip"
	"slices"
	"strings"

	"github.com/amqpsim/amqpsim/protocol"
)

// The user tags RabbitMQ's management plugin knows. A user may carry any
// tags; these are the ones that grant something.
const (
	TagAdministrator = "administrator"
	TagMonitoring    = "monitoring"
	TagManagement    = "management"
	TagPolicymaker   = "policymaker"
	TagImpersonator  = "impersonator"
)

// The password hashing algorithms of rabbit_password: each hash is
// base64(salt ++ H(salt ++ password)) with a 4-byte random salt.
const (
	HashSHA256 = "rabbit_password_hashing_sha256" // RabbitMQ's default
	HashSHA512 = "rabbit_password_hashing_sha512"
	HashMD5    = "rabbit_password_hashing_md5" // users of RabbitMQ before 3.6
)

// User is a user of the broker's internal database (rabbit_auth_backend_internal).
type User struct {
	Name string
	// Password, when not "", sets the user's password; the broker keeps
	// only its salted hash, so Users and User return it empty.
	Password string
	// PasswordHash is the stored hash, base64(salt ++ H(salt ++
	// password)), as a definitions file carries it. It is read when
	// Password is "". A user with neither has no password and cannot log
	// in with one, as RabbitMQ's passwordless users.
	PasswordHash string
	// HashingAlgorithm names H: one of HashSHA256 (the default, for "")
	// HashSHA512 and HashMD5.
	HashingAlgorithm string
	// Tags are the user's tags, such as TagAdministrator; sorted and
	// without duplicates when the broker returns them.
	Tags []string
}

// HasTag reports whether u carries tag.
func (u User) HasTag(tag string) bool { return slices.Contains(u.Tags, tag) }

// user is a stored user; caller holds the lock for every use.
type user struct {
	name      string
	hash      []byte // salt ++ H(salt ++ password); nil: no password
	algorithm string
	tags      []string
}

// hashFunc returns the hash of algorithm, or an error for one RabbitMQ
// does not have.
func hashFunc(algorithm string) (func() hash.Hash, error) {
	switch algorithm {
	case "", HashSHA256:
		return sha256.New, nil
	case HashSHA512:
		return sha512.New, nil
	case HashMD5:
		return md5.New, nil
	}
	return nil, fmt.Errorf("sim: unknown hashing algorithm %q (want %s, %s or %s)", algorithm, HashSHA256, HashSHA512, HashMD5)
}

// HashPassword returns RabbitMQ's salted hash of password, base64(salt ++
// H(salt ++ password)) (rabbit_password:hash), with H the algorithm ("" is
// HashSHA256) and the given 4-byte salt. It is how a definitions file's
// password_hash is made; the broker draws its salts from Config.Salts, or
// Config.Seed.
func HashPassword(algorithm, password string, salt [4]byte) (string, error) {
	h, err := hashFunc(algorithm)
	if err != nil {
		return "", err
	}
	return base64.StdEncoding.EncodeToString(saltedHash(h, salt[:], password)), nil
}

// saltedHash returns salt ++ H(salt ++ password), in a new slice; salt is
// the 4-byte salt.
func saltedHash(h func() hash.Hash, salt []byte, password string) []byte {
	d := h()
	d.Write(salt)
	d.Write([]byte(password))
	return d.Sum(slices.Clone(salt))
}

// checkPassword reports whether password matches u's hash.
func (u *user) checkPassword(password string) bool {
	if len(u.hash) < 4 {
		return false
	}
	h, err := hashFunc(u.algorithm)
	if err != nil {
		return false
	}
	return subtle.ConstantTimeCompare(saltedHash(h, u.hash[:4], password), u.hash) == 1
}

// newUser validates u and makes the stored user; caller holds the lock
// (the salt comes from the broker's salt source).
func (b *Broker) newUser(u User) (*user, error) {
	if u.Name == "" {
		return nil, errors.New("sim: a user needs a name")
	}
	h, err := hashFunc(u.HashingAlgorithm)
	if err != nil {
		return nil, fmt.Errorf("sim: user %q: %w", u.Name, err)
	}
	algorithm := cmp.Or(u.HashingAlgorithm, HashSHA256)
	out := &user{name: u.Name, algorithm: algorithm, tags: normalTags(u.Tags)}
	switch {
	case u.Password != "":
		var salt [4]byte
		if b.cfg.Salts != nil {
			if _, err := io.ReadFull(b.cfg.Salts, salt[:]); err != nil {
				return nil, fmt.Errorf("sim: user %q: reading a salt: %w", u.Name, err)
			}
		} else {
			v := b.salts.Uint32()
			salt[0], salt[1], salt[2], salt[3] = byte(v>>24), byte(v>>16), byte(v>>8), byte(v)
		}
		out.hash = saltedHash(h, salt[:], u.Password)
	case u.PasswordHash != "":
		raw, err := base64.StdEncoding.DecodeString(u.PasswordHash)
		if err != nil {
			return nil, fmt.Errorf("sim: user %q: password_hash is not base64: %v", u.Name, err)
		}
		if want := 4 + h().Size(); len(raw) != want {
			return nil, fmt.Errorf("sim: user %q: password_hash has %d bytes, %s makes %d", u.Name, len(raw), algorithm, want)
		}
		out.hash = raw
	}
	return out, nil
}

func normalTags(tags []string) []string {
	var out []string
	for _, t := range tags {
		if t = strings.TrimSpace(t); t != "" {
			out = append(out, t)
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

func (u *user) public() User {
	out := User{Name: u.name, HashingAlgorithm: u.algorithm, Tags: slices.Clone(u.tags)}
	if u.hash != nil {
		out.PasswordHash = base64.StdEncoding.EncodeToString(u.hash)
	}
	return out
}

// AddUser creates a user, as rabbitmqctl add_user does (with the tags of
// set_user_tags). It fails for a user that exists.
func (b *Broker) AddUser(u User) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if _, ok := b.users[u.Name]; ok {
		return fmt.Errorf("sim: user %q already exists", u.Name)
	}
	nu, err := b.newUser(u)
	if err != nil {
		return err
	}
	b.users[u.Name] = nu
	return nil
}

// PutUser creates a user or replaces one's password and tags, as the
// management API's PUT /api/users/{name} does; its permissions stay.
func (b *Broker) PutUser(u User) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	nu, err := b.newUser(u)
	if err != nil {
		return err
	}
	b.users[u.Name] = nu
	return nil
}

// SetUserTags replaces a user's tags, as rabbitmqctl set_user_tags does
// (no tags clears them). Open connections keep the tags their user had
// when they logged in (measured on 3.10.8: an impersonator tag added
// later does not let an open connection publish with another user-id, and
// one removed later does not stop it).
func (b *Broker) SetUserTags(name string, tags ...string) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	u, ok := b.users[name]
	if !ok {
		return fmt.Errorf("%w %q", ErrNoUser, name)
	}
	u.tags = normalTags(tags)
	return nil
}

// DeleteUser deletes a user and its permissions in every vhost, as
// rabbitmqctl delete_user does, and closes the user's connections with
// 320 CONNECTION_FORCED "user 'u' is deleted" (measured on 3.10.8).
func (b *Broker) DeleteUser(name string) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if _, ok := b.users[name]; !ok {
		return fmt.Errorf("%w %q", ErrNoUser, name)
	}
	delete(b.users, name)
	for _, v := range b.vhosts {
		delete(v.perms, name)
		delete(v.topicPerms, name)
	}
	err := protocol.Errorf(protocol.ConnectionForced, protocol.Method{}, "user '%s' is deleted", name)
	for _, c := range slices.Clone(b.conns) {
		if c.user == name {
			c.fail(err)
		}
	}
	b.flush()
	return nil
}

// ErrNoUser is wrapped by the errors for a user that does not exist.
var ErrNoUser = errors.New("sim: no such user")

// User returns the named user, its password empty and its hash set.
func (b *Broker) User(name string) (User, bool) {
	b.mu.Lock()
	defer b.mu.unlockView()
	u, ok := b.users[name]
	if !ok {
		return User{}, false
	}
	return u.public(), true
}

// Users returns every user, by name, their passwords empty and hashes set.
func (b *Broker) Users() []User {
	b.mu.Lock()
	defer b.mu.unlockView()
	out := make([]User, 0, len(b.users))
	for _, n := range slices.Sorted(maps.Keys(b.users)) {
		out = append(out, b.users[n].public())
	}
	return out
}

// LoginError is why the broker refused a login. Reason is what RabbitMQ
// writes to its log ("user 'u' - invalid credentials", "user 'guest' can
// only connect via localhost"); a client sees only LoginRefusal's text.
type LoginError struct {
	User   string
	Reason string
}

// Error says why the login was refused, as RabbitMQ's log does.
func (e *LoginError) Error() string { return "sim: login refused: " + e.Reason }

// LoginRefusal is the connection.close RabbitMQ 3.10 sends after start-ok to a
// client that announced the authentication_failure_close capability: 403
// ACCESS_REFUSED and a text that names the mechanism and nothing else
// (rabbit_reader:auth_fail). A client without the capability gets no
// close: the socket is dropped.
func LoginRefusal(mechanism string) *Error {
	return protocol.Errorf(protocol.AccessRefused, protocol.Method{},
		"Login was refused using authentication mechanism %s. For details see the broker logfile.", mechanism)
}

// Authenticate checks a user's password, as connection.start-ok and the
// management API's basic authentication do, and returns the user. local is
// the address the client connected to (the socket's own address: RabbitMQ's
// rabbit_net:is_loopback reads sockname, not the peer); the zero Addr, for
// in-process and in-memory connections, counts as loopback. A user in
// Config.LoopbackUsers ("guest" by default) may log in only over loopback.
// The error is a *LoginError.
func (b *Broker) Authenticate(name, password string, local netip.Addr) (User, error) {
	b.mu.Lock()
	defer b.mu.unlockView()
	u, err := b.authenticate(name, password, local)
	if err != nil {
		return User{}, err
	}
	return u.public(), nil
}

// authenticate is Authenticate; caller holds the lock.
func (b *Broker) authenticate(name, password string, local netip.Addr) (*user, error) {
	if password == "" {
		// rabbit_auth_backend_internal:user_login_authentication/2
		// refuses a blank password before it looks for the user, whatever
		// the user's hash (measured on 3.10.8: a user made with
		// add_user u '', or over HTTP with "password":"" or none, never
		// logs in; 4.0.5 and 4.3.6 read the same).
		return nil, &LoginError{User: name, Reason: fmt.Sprintf("user '%s' attempted to log in with a blank password, which is prohibited by the internal authN backend. "+
			"To use TLS/x509 certificate-based authentication, see the rabbitmq_auth_mechanism_ssl plugin and configure the client to use the EXTERNAL authentication mechanism. "+
			"Alternatively change the password for the user to be non-blank.", name)}
	}
	u, ok := b.users[name]
	if !ok || !u.checkPassword(password) {
		return nil, &LoginError{User: name, Reason: fmt.Sprintf("user '%s' - invalid credentials", name)}
	}
	// rabbit_access_control:check_user_loopback runs after the password
	// check: a wrong password of guest is "invalid credentials" from
	// anywhere.
	if local.IsValid() && !local.Unmap().IsLoopback() && slices.Contains(b.loopbackUsers, name) {
		return nil, &LoginError{User: name, Reason: fmt.Sprintf("user '%s' can only connect via localhost", name)}
	}
	return u, nil
}
