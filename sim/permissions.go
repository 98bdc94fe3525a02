package sim

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/amqpsim/amqpsim/protocol"
)

// Permissions are a user's rights in one vhost: three regular expressions
// matched against the names of the queues and exchanges a method touches
// (rabbit_access_control:check_resource_access). Configure covers
// declaring and deleting, Write publishing to an exchange and binding to a
// queue or exchange, Read consuming, getting and purging a queue and
// binding from an exchange. An expression matches anywhere in the name
// unless anchored; "" is ^$, which matches only the empty name (and
// "\n"), as in RabbitMQ: it grants nothing.
//
// The expressions match as RabbitMQ's Erlang re does: over the name's
// bytes, with $ matching before a final newline too, and Latin-1 classes
// (see pattern): ^.{1,3}$ refuses 'ééé', six bytes. An expression
// amqpsim cannot match that way is refused with an error saying why: $
// followed by something that consumes input, \b, and, as Go's regexp
// does not have them, back-references and look-around, which PCRE
// accepts. Everything RabbitMQ's documentation shows ("^amq\\.gen.*",
// "^(orders|billing)-", ".*") means the same.
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

// permission is a user's compiled permissions in one vhost.
type permission struct {
	Permissions
	configure, write, read *pattern
}

// Permission kinds, in RabbitMQ's words (check_resource_access).
const (
	permConfigure = "configure"
	permWrite     = "write"
	permRead      = "read"
)

func (p *permission) allows(kind, name string) bool {
	var re *pattern
	switch kind {
	case permConfigure:
		re = p.configure
	case permWrite:
		re = p.write
	default:
		re = p.read
	}
	return re.match(name)
}

// compilePermission compiles p; an invalid expression is an error naming it,
// as rabbitmqctl set_permissions refuses it ({invalid_regexp, ...}).
func compilePermission(p Permissions) (*permission, error) {
	out := &permission{Permissions: p}
	var err error
	if out.configure, err = permissionPattern(permConfigure, p.Configure); err != nil {
		return nil, err
	}
	if out.write, err = permissionPattern(permWrite, p.Write); err != nil {
		return nil, err
	}
	if out.read, err = permissionPattern(permRead, p.Read); err != nil {
		return nil, err
	}
	return out, nil
}

// permissionPattern compiles one permission's expression; "" is ^$
// (rabbit_auth_backend_internal:check_resource_access/4 and
// check_topic_access/4: <<"">> -> <<$^, $$>>; measured on 3.10.8: topic
// permissions "" "" let a user publish and bind with the routing key ""
// and refuse every other key).
func permissionPattern(what, src string) (*pattern, error) {
	if src == "" {
		src = "^$"
	}
	re, err := compilePattern(src)
	if err != nil {
		return nil, fmt.Errorf("sim: %s permission: invalid regular expression '%s': %v", what, src, err)
	}
	return re, nil
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
	v, err := b.userVhost(vhostName, userName)
	if err != nil {
		return err
	}
	cp, err := compilePermission(p)
	if err != nil {
		return err
	}
	v.perms[userName] = cp
	return nil
}

// userVhost looks up a vhost for a permission of a user who must exist.
// Caller holds the lock.
func (b *Broker) userVhost(vhostName, userName string) (*vhost, error) {
	v, err := b.lookupVhost(vhostName)
	if err != nil {
		return nil, err
	}
	if _, ok := b.users[userName]; !ok {
		return nil, fmt.Errorf("%w %q", ErrNoUser, userName)
	}
	return v, nil
}

// ClearPermissions removes a user's permissions in a vhost, as rabbitmqctl
// clear_permissions does; the user can no longer open connections to it.
// Clearing permissions that are not set does nothing.
func (b *Broker) ClearPermissions(vhostName, userName string) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	v, err := b.userVhost(vhostName, userName)
	if err != nil {
		return err
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
// permission cleared while a channel is busy still allows what that
// channel did lately (measured on 3.10.8: a redeclare on the same channel
// right after clear_permissions succeeds, on a new channel it is refused).
const permCacheSize = 12

// hibernateAfter is how long a channel stays idle before it forgets its
// permission checks: rabbit_channel erases its caches in
// handle_pre_hibernate, and gen_server2 hibernates it after
// HIBERNATE_AFTER_MIN (1 s) of idleness, a time its backoff stretches
// towards 10 s on a channel that keeps waking. amqpsim takes the 1 s and
// counts only the channel's methods as activity (RabbitMQ also counts the
// messages its queues send it). Measured on 3.10.8: after 15 s idle the
// same channel's redeclare is refused.
const hibernateAfter = time.Second

// wake is a method arriving on the channel: after hibernateAfter idle, the
// permission caches are gone. Caller holds the lock.
func (ch *Channel) wake() {
	if time.Duration(ch.b.elapsed-ch.lastCall) >= hibernateAfter {
		ch.permCache, ch.topicCache = ch.permCache[:0], ch.topicCache[:0]
	}
	ch.lastCall = ch.b.elapsed
}

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
		return ch.refused(m, kind, "access to %s '%s' in vhost '%s' refused for user '%s'", resource, name, c.vhost.name, c.user)
	}
	ch.permCache = remember(ch.permCache, key)
	return nil
}

// refused is a missing permission's 403; from 4.0 its text starts with
// the permission (Profile.AccessRefusalNamesPermission).
func (ch *Channel) refused(m protocol.Method, kind, format string, args ...any) error {
	if ch.b.profile.AccessRefusalNamesPermission {
		format, args = "%s "+format, append([]any{kind}, args...)
	}
	return protocol.Errorf(protocol.AccessRefused, m, format, args...)
}

// checkPassiveAccess is 4.3's check of a passive declare
// (Profile.PassiveDeclareNeedsPermission): any of the three permissions
// on the name will do, the refusal names configure. A remembered check of
// any of them counts; a new success is remembered as the first permission
// that allows it. Caller holds the lock.
func (ch *Channel) checkPassiveAccess(m protocol.Method, resource, name string) error {
	if !ch.b.profile.PassiveDeclareNeedsPermission {
		return nil
	}
	kinds := []string{permConfigure, permWrite, permRead}
	for _, kind := range kinds {
		if slices.Contains(ch.permCache, permCheck{kind, resource, name}) {
			return nil
		}
	}
	c := ch.conn
	if p, ok := c.vhost.perms[c.user]; ok {
		for _, kind := range kinds {
			if p.allows(kind, name) {
				ch.permCache = remember(ch.permCache, permCheck{kind, resource, name})
				return nil
			}
		}
	}
	return ch.refused(m, permConfigure, "access to %s '%s' in vhost '%s' refused for user '%s'", resource, name, c.vhost.name, c.user)
}

// remember prepends a successful check to a channel's cache, dropping the
// oldest beyond permCacheSize. A hit does not move to the front:
// rabbit_channel prepends misses only.
func remember(cache []permCheck, k permCheck) []permCheck {
	if len(cache) == permCacheSize {
		cache = cache[:permCacheSize-1]
	}
	return slices.Insert(cache, 0, k)
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
	if re == nil || !re.match(key) {
		return ch.refused(m, kind, "access to topic '%s' in exchange '%s' in vhost '%s' refused for user '%s'", key, x.name, c.vhost.name, c.user)
	}
	ch.topicCache = remember(ch.topicCache, ck)
	return nil
}

// TopicPermissions restrict, for one user, vhost and topic exchange, the
// routing keys the user may publish with (Write) and bind with (Read),
// as RabbitMQ's topic authorisation does (rabbit_auth_backend_internal:
// check_topic_access). A user without topic permissions on an exchange
// may use every key. The expressions match the key as Permissions' do:
// "" is ^$, which lets the empty key (and "\n") through (measured on
// 3.10.8).
//
// Before matching, "{username}" in an expression becomes the user's name
// and "{vhost}" the vhost's, as text, not quoted: a "." in a user name
// matches any character, as in RabbitMQ. "{client_id}" stays as it is (an
// AMQP 0-9-1 connection has no client id) and matches itself literally.
// Measured on 3.10.8 (4.0.5 and 4.3.6 alike): "^{username}$" lets user
// p310-u publish with key "p310-u" only, "{vhost}" lets it bind with "/",
// and for user p310.v "^{username}$" allows "p310xv" too. Unlike RabbitMQ,
// amqpsim refuses every key when the expanded expression is not a valid
// one (a user name with an unbalanced parenthesis), where RabbitMQ's
// channel fails on it.
type TopicPermissions struct {
	User     string
	Vhost    string
	Exchange string
	Write    string
	Read     string
}

type topicPermission struct {
	TopicPermissions
	write, read *pattern // expanded; nil: refuses every key
}

// SetTopicPermissions sets a user's topic permissions on one exchange of a
// vhost, replacing any, as rabbitmqctl set_topic_permissions does. It
// fails for a missing user or vhost and an invalid expression, and from
// 4.3 for a missing exchange (Profile.TopicPermissionsNeedExchange).
func (b *Broker) SetTopicPermissions(tp TopicPermissions) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	v, err := b.userVhost(tp.Vhost, tp.User)
	if err != nil {
		return err
	}
	if _, ok := v.exchanges[tp.Exchange]; !ok && b.profile.TopicPermissionsNeedExchange {
		return fmt.Errorf("sim: exchange %q does not exist in vhost %q", tp.Exchange, tp.Vhost)
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

// compileTopicPermission checks tp's expressions as written, as
// rabbitmqctl set_topic_permissions does, and compiles them expanded for
// tp's user and vhost, the only ones they are checked for.
func compileTopicPermission(tp TopicPermissions) (*topicPermission, error) {
	out := &topicPermission{TopicPermissions: tp}
	for _, e := range []struct {
		what, src string
		re        **pattern
	}{{"topic " + permWrite, tp.Write, &out.write}, {"topic " + permRead, tp.Read, &out.read}} {
		re, err := permissionPattern(e.what, e.src)
		if err != nil {
			return nil, err
		}
		if expanded := expandTopicVariables(e.src, tp.User, tp.Vhost); expanded != e.src {
			re, _ = compilePattern(expanded) // nil if invalid: refuses every key
		}
		*e.re = re
	}
	return out, nil
}

// expandTopicVariables is rabbit_auth_backend_internal's
// expand_topic_permission for an AMQP 0-9-1 connection, whose variable
// map has username and vhost only: each "{name}" replaced by the value,
// as text, one name after the other in the map's order.
func expandTopicVariables(src, user, vhost string) string {
	if !strings.Contains(src, "{") {
		return src
	}
	return strings.ReplaceAll(strings.ReplaceAll(src, "{username}", user), "{vhost}", vhost)
}

// ClearTopicPermissions removes a user's topic permissions in a vhost: on
// one exchange, or on all of them for exchange "".
func (b *Broker) ClearTopicPermissions(vhostName, userName, exchange string) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	v, err := b.userVhost(vhostName, userName)
	if err != nil {
		return err
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
// property, when set, must be the connection's user, unless the user had
// the impersonator tag when the connection logged in (measured on 3.10.8:
// 406 PRECONDITION_FAILED "user_id property set to 'someone' but
// authenticated user was 'guest'"; a tag added by set_user_tags does not
// let an open connection impersonate, on its old channels or new ones,
// and one removed does not stop it; 4.0.5 and 4.3.6 alike).
func (ch *Channel) checkUserID(claimed string) error {
	c := ch.conn
	if claimed == "" || claimed == c.user {
		return nil
	}
	if slices.Contains(c.tags, TagImpersonator) {
		return nil
	}
	return protocol.Errorf(protocol.PreconditionFailed, protocol.BasicPublish, "user_id property set to '%s' but authenticated user was '%s'", claimed, c.user)
}
