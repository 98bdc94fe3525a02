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
	"maps"
	"net/netip"
	"regexp"
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

// Permissions are a user's rights in one vhost: three regular expressions
// matched against the names of the queues and exchanges a method touches
// (rabbit_access_control:check_resource_access). Configure covers
// declaring and deleting, Write publishing to an exchange and binding to a
// queue or exchange, Read consuming, getting and purging a queue and
// binding from an exchange. An expression matches anywhere in the name
// unless anchored; "" matches nothing, as in RabbitMQ.
//
// Unlike RabbitMQ, whose expressions are Erlang's re (PCRE), amqpsim uses
// Go's regexp (RE2): back-references and look-around, which PCRE accepts,
// are refused as invalid; everything else that RabbitMQ's documentation
// shows ("^amq\\.gen.*", "^(orders|billing)-", ".*") means the same.
type Permissions struct {
	Configure string
	Write     string
	Read      string
}

// FullPermissions is ".*" for all three, RabbitMQ's default_permissions.
var FullPermissions = Permissions{Configure: ".*", Write: ".*", Read: ".*"}

// UserPermissions are one user's permissions in one vhost.
type UserPermissions struct {
	User  string
	Vhost string
	Permissions
}

// user is a stored user; caller holds the lock for every use.
type user struct {
	name      string
	hash      []byte // salt ++ H(salt ++ password); nil: no password
	algorithm string
	tags      []string
}

// permission is a user's compiled permissions in one vhost.
type permission struct {
	Permissions
	configure, write, read *regexp.Regexp // nil for "": nothing matches
}

// Permission kinds, in RabbitMQ's words (check_resource_access).
const (
	permConfigure = "configure"
	permWrite     = "write"
	permRead      = "read"
)

func (p *permission) allows(kind, name string) bool {
	var re *regexp.Regexp
	switch kind {
	case permConfigure:
		re = p.configure
	case permWrite:
		re = p.write
	default:
		re = p.read
	}
	return re != nil && re.MatchString(name)
}

// compilePermission compiles p; an invalid expression is an error naming it,
// as rabbitmqctl set_permissions refuses it ({invalid_regexp, ...}).
func compilePermission(p Permissions) (*permission, error) {
	out := &permission{Permissions: p}
	for _, f := range []struct {
		kind string
		src  string
		re   **regexp.Regexp
	}{{permConfigure, p.Configure, &out.configure}, {permWrite, p.Write, &out.write}, {permRead, p.Read, &out.read}} {
		if f.src == "" {
			continue
		}
		re, err := regexp.Compile(f.src)
		if err != nil {
			return nil, fmt.Errorf("sim: %s permission: invalid regular expression '%s': %v", f.kind, f.src, err)
		}
		*f.re = re
	}
	return out, nil
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
// password_hash is made; the broker draws its salts from Config.Seed.
func HashPassword(algorithm, password string, salt [4]byte) (string, error) {
	h, err := hashFunc(algorithm)
	if err != nil {
		return "", err
	}
	return base64.StdEncoding.EncodeToString(saltedHash(h, salt[:], password)), nil
}

func saltedHash(h func() hash.Hash, salt []byte, password string) []byte {
	d := h()
	d.Write(salt)
	d.Write([]byte(password))
	return d.Sum(slices.Clip(salt[:4:4]))
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
	return subtle.ConstantTimeCompare(saltedHash(h, slices.Clone(u.hash[:4]), password), u.hash) == 1
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
		v := b.salts.Uint32()
		salt[0], salt[1], salt[2], salt[3] = byte(v>>24), byte(v>>16), byte(v>>8), byte(v)
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

// SetPermissions sets a user's permissions in a vhost, replacing any, as
// rabbitmqctl set_permissions does. It fails for a missing user or vhost
// and for an invalid expression, changing nothing. Channels check the
// permissions on every method; as in RabbitMQ, a channel remembers its
// last successful checks (see Channel), so a narrowed permission applies
// to new channels and to resources the channel has not used lately.
func (b *Broker) SetPermissions(vhostName, userName string, p Permissions) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	v, err := b.lookupVhost(vhostName)
	if err != nil {
		return err
	}
	if _, ok := b.users[userName]; !ok {
		return fmt.Errorf("%w %q", ErrNoUser, userName)
	}
	cp, err := compilePermission(p)
	if err != nil {
		return err
	}
	v.perms[userName] = cp
	return nil
}

// ClearPermissions removes a user's permissions in a vhost, as rabbitmqctl
// clear_permissions does; the user can no longer open connections to it.
// Clearing permissions that are not set does nothing.
func (b *Broker) ClearPermissions(vhostName, userName string) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	v, err := b.lookupVhost(vhostName)
	if err != nil {
		return err
	}
	if _, ok := b.users[userName]; !ok {
		return fmt.Errorf("%w %q", ErrNoUser, userName)
	}
	delete(v.perms, userName)
	return nil
}

// UserPermissions returns a user's permissions in a vhost, and whether
// there are any.
func (b *Broker) UserPermissions(vhostName, userName string) (Permissions, bool) {
	b.mu.Lock()
	defer b.mu.unlockView()
	v, ok := b.vhosts[vhostName]
	if !ok {
		return Permissions{}, false
	}
	p, ok := v.perms[userName]
	if !ok {
		return Permissions{}, false
	}
	return p.Permissions, true
}

// Permissions returns every user's permissions, by vhost and then user.
func (b *Broker) Permissions() []UserPermissions {
	b.mu.Lock()
	defer b.mu.unlockView()
	var out []UserPermissions
	for _, vn := range slices.Sorted(maps.Keys(b.vhosts)) {
		v := b.vhosts[vn]
		for _, un := range slices.Sorted(maps.Keys(v.perms)) {
			out = append(out, UserPermissions{User: un, Vhost: vn, Permissions: v.perms[un].Permissions})
		}
	}
	return out
}

// LoginError is why the broker refused a login. Reason is what RabbitMQ
// writes to its log ("user 'u' - invalid credentials", "user 'guest' can
// only connect via localhost"); a client sees only Refusal's text.
type LoginError struct {
	User   string
	Reason string
}

func (e *LoginError) Error() string { return "sim: login refused: " + e.Reason }

// Refusal is the connection.close RabbitMQ 3.10 sends after start-ok to a
// client that announced the authentication_failure_close capability: 403
// ACCESS_REFUSED and a text that names the mechanism and nothing else
// (rabbit_reader:auth_fail). A client without the capability gets no
// close: the socket is dropped.
func (e *LoginError) Refusal(mechanism string) *Error {
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

// checkVhostAccess is rabbit_access_control:check_vhost_access at
// connection.open: the vhost must exist, then the user must have
// permissions in it (any, even three empty expressions). Caller holds the
// lock.
func (b *Broker) checkVhostAccess(userName, vhostName string) (*vhost, error) {
	v, ok := b.vhosts[vhostName]
	if !ok {
		return nil, protocol.Errorf(protocol.NotAllowed, protocol.ConnectionOpen, "vhost %s not found", vhostName)
	}
	if _, ok := v.perms[userName]; !ok {
		return nil, protocol.Errorf(protocol.NotAllowed, protocol.ConnectionOpen, "access to vhost '%s' refused for user '%s'", vhostName, userName)
	}
	return v, nil
}

// permCheck is one successful permission check a channel remembers.
type permCheck struct {
	kind, resource, name string
}

// permCacheSize is rabbit_channel's MAX_PERMISSION_CACHE_SIZE: a channel
// remembers its last 12 successful checks and does not repeat them, so a
// permission cleared while a channel is open still allows what that
// channel did lately (measured on 3.10.8: a redeclare on the same channel
// after clear_permissions succeeds, on a new channel it is refused).
const permCacheSize = 12

// checkAccess is rabbit_channel's check_resource_access: the connection's
// user needs kind ("configure", "write" or "read") permission on the
// named resource ("queue" or "exchange"; the default exchange is named
// "amq.default" here, as RabbitMQ matches and reports it). Caller holds
// the lock.
func (ch *Channel) checkAccess(m protocol.Method, kind, resource, name string) error {
	if resource == "exchange" && name == "" {
		name = "amq.default"
	}
	key := permCheck{kind, resource, name}
	if slices.Contains(ch.permCache, key) {
		return nil
	}
	c := ch.conn
	if p, ok := c.vhost.perms[c.user]; !ok || !p.allows(kind, name) {
		return protocol.Errorf(protocol.AccessRefused, m, "access to %s '%s' in vhost '%s' refused for user '%s'", resource, name, c.vhost.name, c.user)
	}
	// A hit does not move to the front: rabbit_channel prepends misses
	// only, dropping the oldest.
	if len(ch.permCache) == permCacheSize {
		ch.permCache = ch.permCache[:permCacheSize-1]
	}
	ch.permCache = slices.Insert(ch.permCache, 0, key)
	return nil
}

// checkTopicAccess is rabbit_channel's check_topic_authorisation: for a
// topic exchange, the user's topic permissions on it, if any, must match
// the routing key (kind "write" for publish, "read" for the binding
// methods). Its successful checks are remembered like checkAccess's.
func (ch *Channel) checkTopicAccess(m protocol.Method, kind string, x *exchange, key string) error {
	if x == nil || x.kind != "topic" {
		return nil
	}
	c := ch.conn
	tp, ok := c.vhost.topicPerms[c.user][x.name]
	if !ok {
		return nil
	}
	ck := permCheck{"topic-" + kind, x.name, key}
	if slices.Contains(ch.topicCache, ck) {
		return nil
	}
	re := tp.read
	if kind == permWrite {
		re = tp.write
	}
	if re == nil || !re.MatchString(key) {
		return protocol.Errorf(protocol.AccessRefused, m, "access to topic '%s' in exchange '%s' in vhost '%s' refused for user '%s'", key, x.name, c.vhost.name, c.user)
	}
	if len(ch.topicCache) == permCacheSize {
		ch.topicCache = ch.topicCache[:permCacheSize-1]
	}
	ch.topicCache = slices.Insert(ch.topicCache, 0, ck)
	return nil
}

// TopicPermissions restrict, for one user, vhost and topic exchange, the
// routing keys the user may publish with (Write) and bind with (Read),
// as RabbitMQ's topic authorisation does (rabbit_auth_backend_internal:
// check_topic_access). A user without topic permissions on an exchange
// may use every key. Unlike RabbitMQ, amqpsim does not expand the
// {username}, {vhost} and {client_id} variables.
type TopicPermissions struct {
	User     string
	Vhost    string
	Exchange string
	Write    string
	Read     string
}

type topicPermission struct {
	TopicPermissions
	write, read *regexp.Regexp // nil for "": nothing matches
}

// SetTopicPermissions sets a user's topic permissions on one exchange of a
// vhost, replacing any, as rabbitmqctl set_topic_permissions does. It
// fails for a missing user or vhost and an invalid expression.
func (b *Broker) SetTopicPermissions(tp TopicPermissions) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	v, err := b.lookupVhost(tp.Vhost)
	if err != nil {
		return err
	}
	if _, ok := b.users[tp.User]; !ok {
		return fmt.Errorf("%w %q", ErrNoUser, tp.User)
	}
	ctp, err := compileTopicPermission(tp)
	if err != nil {
		return err
	}
	if v.topicPerms[tp.User] == nil {
		v.topicPerms[tp.User] = map[string]*topicPermission{}
	}
	v.topicPerms[tp.User][tp.Exchange] = ctp
	return nil
}

func compileTopicPermission(tp TopicPermissions) (*topicPermission, error) {
	out := &topicPermission{TopicPermissions: tp}
	for _, f := range []struct {
		kind, src string
		re        **regexp.Regexp
	}{{permWrite, tp.Write, &out.write}, {permRead, tp.Read, &out.read}} {
		if f.src == "" {
			continue
		}
		re, err := regexp.Compile(f.src)
		if err != nil {
			return nil, fmt.Errorf("sim: topic %s permission: invalid regular expression '%s': %v", f.kind, f.src, err)
		}
		*f.re = re
	}
	return out, nil
}

// ClearTopicPermissions removes a user's topic permissions in a vhost: on
// one exchange, or on all of them for exchange "".
func (b *Broker) ClearTopicPermissions(vhostName, userName, exchange string) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	v, err := b.lookupVhost(vhostName)
	if err != nil {
		return err
	}
	if _, ok := b.users[userName]; !ok {
		return fmt.Errorf("%w %q", ErrNoUser, userName)
	}
	if exchange == "" {
		delete(v.topicPerms, userName)
		return nil
	}
	delete(v.topicPerms[userName], exchange)
	return nil
}

// AllTopicPermissions returns every topic permission, by vhost, user and
// exchange.
func (b *Broker) AllTopicPermissions() []TopicPermissions {
	b.mu.Lock()
	defer b.mu.unlockView()
	var out []TopicPermissions
	for _, vn := range slices.Sorted(maps.Keys(b.vhosts)) {
		v := b.vhosts[vn]
		for _, un := range slices.Sorted(maps.Keys(v.topicPerms)) {
			for _, xn := range slices.Sorted(maps.Keys(v.topicPerms[un])) {
				out = append(out, v.topicPerms[un][xn].TopicPermissions)
			}
		}
	}
	return out
}

// checkQueueAccess is checkAccess on a queue named as a method names it:
// "" is the channel's last declared queue; without one the method's own
// lookup reports the error.
func (ch *Channel) checkQueueAccess(m protocol.Method, kind, name string) error {
	name, err := ch.queueName(name, m)
	if err != nil {
		return nil
	}
	return ch.checkAccess(m, kind, "queue", name)
}

// checkUserID is rabbit_channel:check_user_id_header: a message's user-id
// property, when set, must be the connection's user, unless the user has
// the impersonator tag (measured on 3.10.8: 406 PRECONDITION_FAILED
// "user_id property set to 'someone' but authenticated user was 'guest'").
func (ch *Channel) checkUserID(claimed string) error {
	c := ch.conn
	if claimed == "" || claimed == c.user {
		return nil
	}
	if u, ok := ch.b.users[c.user]; ok && slices.Contains(u.tags, TagImpersonator) {
		return nil
	}
	return protocol.Errorf(protocol.PreconditionFailed, protocol.BasicPublish, "user_id property set to '%s' but authenticated user was '%s'", claimed, c.user)
}
