/* Checks a tool call's edited arguments against its `args_schema`, with the JSON Schema
 * keywords askgate checks (the gateway checks them again and has the final word): type,
 * properties, required, enum, const, items (one schema), minimum, maximum, minLength,
 * maxLength (in code points), additionalProperties, anyOf, oneOf; annotations constrain
 * nothing, and `true` / `false` are schemas too. A schema using any other keyword is not
 * checked here: the gateway then says `edit_check: "object"`, and the page only asks for an
 * object (approval.js).
 *
 * Each problem is one line naming the field it is about: `query: expected a string, got a
 * number`, `items[2].name: required, but missing`; `arguments: ...` for the whole object.
 */

// Deeper than this, a value is not looked into (the gateway bounds nesting far below it).
const MAX_DEPTH = 64;
// anyOf / oneOf say which form came closest, with at most this many of its problems.
const BRANCH_HINTS = 1;

const hasOwn = (object, key) => Object.prototype.hasOwnProperty.call(object, key);

export function isObject(value) {
  return value !== null && typeof value === 'object' && !Array.isArray(value);
}

// Whether two JSON values are equal (objects by their members, in any order).
export function sameJson(a, b) {
  if (a === b) return true;
  if (Array.isArray(a)) {
    return Array.isArray(b) && a.length === b.length && a.every((x, i) => sameJson(x, b[i]));
  }
  if (!isObject(a) || !isObject(b)) return false;
  const keys = Object.keys(a);
  return keys.length === Object.keys(b).length &&
    keys.every((k) => hasOwn(b, k) && sameJson(a[k], b[k]));
}

const IDENTIFIER_RE = /^[A-Za-z_$][A-Za-z0-9_$]*$/;

// A field's path as a person reads it: `query`, `items[2].name`, `["odd key"]`; `arguments`
// for the whole object.
export function pathText(parts) {
  let text = '';
  for (const part of parts) {
    if (typeof part === 'number') text += '[' + part + ']';
    else if (IDENTIFIER_RE.test(part)) text += (text ? '.' : '') + part;
    else text += '[' + JSON.stringify(part) + ']';
  }
  return text || 'arguments';
}

const TYPE_NAMES = {
  object: 'an object', array: 'an array', string: 'a string', number: 'a number',
  integer: 'an integer', boolean: 'a boolean (true or false)', null: 'null',
};

function typeOf(value) {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'an array';
  if (typeof value === 'number') return Number.isInteger(value) ? 'an integer' : 'a number';
  if (typeof value === 'boolean') return 'a boolean';
  return TYPE_NAMES[typeof value] || typeof value;
}

function hasType(value, type) {
  switch (type) {
    case 'object': return isObject(value);
    case 'array': return Array.isArray(value);
    case 'string': return typeof value === 'string';
    case 'number': return typeof value === 'number';
    case 'integer': return typeof value === 'number' && Number.isInteger(value);
    case 'boolean': return typeof value === 'boolean';
    case 'null': return value === null;
    default: return false;
  }
}

// A value in a message: JSON, cut short.
function shown(value) {
  const text = JSON.stringify(value);
  return text.length > 60 ? text.slice(0, 59) + '…' : text;
}

function count(n, one, many) {
  return n + ' ' + (n === 1 ? one : many);
}

// Every problem with `value` under `schema`, one line each (empty when it conforms).
export function checkArgs(value, schema) {
  const out = [];
  check(value, schema, [], out, 0);
  return out;
}

function check(value, schema, path, out, depth) {
  const at = (where, message) => out.push(pathText(where) + ': ' + message);
  if (schema === true || schema === undefined) return;
  if (schema === false) return at(path, 'not allowed here');
  if (!isObject(schema)) return;
  if (depth > MAX_DEPTH) return at(path, 'nested too deeply to check');
  if (hasOwn(schema, 'type')) {
    const types = Array.isArray(schema.type) ? schema.type : [schema.type];
    if (!types.some((t) => hasType(value, t))) {
      const names = types.map((t) => TYPE_NAMES[t] || String(t));
      const expected = names.length > 1
        ? 'one of ' + names.slice(0, -1).join(', ') + ' or ' + names[names.length - 1]
        : names[0];
      return at(path, 'expected ' + expected + ', got ' + typeOf(value));
    }
  }
  if (Array.isArray(schema.enum) && !schema.enum.some((e) => sameJson(e, value))) {
    at(path, (schema.enum.length === 1 ? 'expected ' : 'expected one of ') +
      schema.enum.map(shown).join(', '));
  }
  if (hasOwn(schema, 'const') && !sameJson(schema.const, value)) {
    at(path, 'expected ' + shown(schema.const));
  }
  if (typeof value === 'number') {
    if (typeof schema.minimum === 'number' && value < schema.minimum) {
      at(path, 'must be at least ' + schema.minimum);
    }
    if (typeof schema.maximum === 'number' && value > schema.maximum) {
      at(path, 'must be at most ' + schema.maximum);
    }
  }
  if (typeof value === 'string') {
    const length = Array.from(value).length;
    if (typeof schema.minLength === 'number' && length < schema.minLength) {
      at(path, 'must be at least ' + count(schema.minLength, 'character', 'characters') +
        ' long' + (length ? ' (it has ' + length + ')' : ', and it is empty'));
    }
    if (typeof schema.maxLength === 'number' && length > schema.maxLength) {
      at(path, 'must be at most ' + count(schema.maxLength, 'character', 'characters') +
        ' long (it has ' + length + ')');
    }
  }
  if (isObject(value)) checkObject(value, schema, path, out, depth);
  if (Array.isArray(value) && hasOwn(schema, 'items')) {
    value.forEach((item, i) => check(item, schema.items, path.concat(i), out, depth + 1));
  }
  if (Array.isArray(schema.anyOf)) {
    const tries = schema.anyOf.map((branch) => problemsUnder(value, branch, path, depth));
    if (!tries.some((problems) => !problems.length)) {
      at(path, 'matches none of the forms it may take' + closest(tries));
    }
  }
  if (Array.isArray(schema.oneOf)) {
    const tries = schema.oneOf.map((branch) => problemsUnder(value, branch, path, depth));
    const matching = tries.filter((problems) => !problems.length).length;
    if (matching === 0) at(path, 'matches none of the forms it may take' + closest(tries));
    else if (matching > 1) {
      at(path, 'matches ' + matching + ' of the forms it may take, and exactly one must match');
    }
  }
  return undefined;
}

function checkObject(value, schema, path, out, depth) {
  const properties = isObject(schema.properties) ? schema.properties : {};
  if (Array.isArray(schema.required)) {
    for (const key of schema.required) {
      if (typeof key === 'string' && !hasOwn(value, key)) {
        out.push(pathText(path.concat(key)) + ': required, but missing');
      }
    }
  }
  for (const key of Object.keys(value)) {
    const where = path.concat(key);
    if (hasOwn(properties, key)) check(value[key], properties[key], where, out, depth + 1);
    else if (schema.additionalProperties === false) {
      out.push(pathText(where) + ': not an argument this tool takes');
    } else if (hasOwn(schema, 'additionalProperties')) {
      check(value[key], schema.additionalProperties, where, out, depth + 1);
    }
  }
}

function problemsUnder(value, schema, path, depth) {
  const out = [];
  check(value, schema, path, out, depth + 1);
  return out;
}

// What the form with the fewest problems lacks, as a hint after "matches none...".
function closest(tries) {
  const best = tries.filter((p) => p.length).sort((a, b) => a.length - b.length)[0];
  return best ? ' (closest: ' + best.slice(0, BRANCH_HINTS).join('; ') + ')' : '';
}

// A number JSON.parse could only read as infinite (`1e400`), which JSON cannot send: the
// path to the first one, or null.
export function infiniteAt(value, path = [], depth = 0) {
  if (typeof value === 'number') return Number.isFinite(value) ? null : path;
  if (depth > MAX_DEPTH || value === null || typeof value !== 'object') return null;
  const entries = Array.isArray(value) ? value.map((v, i) => [i, v]) : Object.entries(value);
  for (const [key, item] of entries) {
    const found = infiniteAt(item, path.concat(key), depth + 1);
    if (found) return found;
  }
  return null;
}
