use p256::ecdsa::VerifyingKey;
use p256::ecdsa::signature::Verifier as _;
use p256::pkcs8::EncodePrivateKey as _;
use p256::pkcs8::LineEnding;

use super::*;

fn b64(text: &str) -> Vec<u8> {
    URL_SAFE_NO_PAD.decode(text).expect("base64url in the test")
}

/// RFC 8291 section 5 and appendix A, copied from the RFC's text.
mod rfc8291 {
    pub(super) const PLAINTEXT: &[u8] = b"When I grow up, I want to be a watermelon";
    pub(super) const AS_PRIVATE: &str = "yfWPiYE-n46HLnH0KqZOF1fJJU3MYrct3AELtAQ-oRw";
    pub(super) const AS_PUBLIC: &str =
        "BP4z9KsN6nGRTbVYI_c7VJSPQTBtkgcy27mlmlMoZIIgDll6e3vCYLocInmYWAmS6TlzAC8wEqKK6PBru3jl7A8";
    pub(super) const UA_PUBLIC: &str =
        "BCVxsr7N_eNgVRqvHtD0zTZsEc6-VV-JvLexhqUzORcxaOzi6-AYWXvTBHm4bjyPjs7Vd8pZGH6SRpkNtoIAiw4";
    pub(super) const AUTH_SECRET: &str = "BTBZMqHH6r4Tts7J_aSIgg";
    pub(super) const SALT: &str = "DGv6ra1nlYgDCS1FRnbzlw";
    pub(super) const CEK: &str = "oIhVW04MRdy2XN9CiKLxTg";
    pub(super) const NONCE: &str = "4h_95klXJ5E_qnoN";
    pub(super) const BODY: &str = concat!(
        "DGv6ra1nlYgDCS1FRnbzlwAAEABBBP4z9KsN6nGRTbVYI_c7VJSPQTBtkgcy27ml",
        "mlMoZIIgDll6e3vCYLocInmYWAmS6TlzAC8wEqKK6PBru3jl7A_yl95bQpu6cVPT",
        "pK4Mqgkf1CXztLVBSt2Ks3oZwbuwXPXLWyouBWLVWGNWQexSgSxsj_Qulcy4a-fN",
    );
}

#[test]
fn the_rfc_8291_example_encrypts_byte_for_byte() {
    let as_secret = SecretKey::from_slice(&b64(rfc8291::AS_PRIVATE)).expect("the RFC's key");
    let as_point = as_secret.public_key().to_encoded_point(false);
    assert_eq!(
        URL_SAFE_NO_PAD.encode(as_point.as_bytes()),
        rfc8291::AS_PUBLIC
    );
    let ua_public = decode_p256dh(rfc8291::UA_PUBLIC).expect("the RFC's p256dh");
    let auth = decode_auth(rfc8291::AUTH_SECRET).expect("the RFC's auth");
    let salt: [u8; SALT_LEN] = b64(rfc8291::SALT).try_into().expect("16 bytes");

    let keys = derive_keys(
        &as_secret,
        &ua_public,
        &b64(rfc8291::UA_PUBLIC),
        as_point.as_bytes(),
        &auth,
        &salt,
    );
    assert_eq!(URL_SAFE_NO_PAD.encode(keys.content_key), rfc8291::CEK);
    assert_eq!(URL_SAFE_NO_PAD.encode(keys.nonce), rfc8291::NONCE);

    let body = encrypt_with(rfc8291::PLAINTEXT, &ua_public, &auth, &as_secret, &salt)
        .expect("the RFC's payload fits");
    assert_eq!(URL_SAFE_NO_PAD.encode(body), rfc8291::BODY);
}

#[test]
fn every_message_has_a_fresh_salt_and_ephemeral_key() {
    let first = encrypt(b"hi", rfc8291::UA_PUBLIC, rfc8291::AUTH_SECRET).expect("encrypts");
    let second = encrypt(b"hi", rfc8291::UA_PUBLIC, rfc8291::AUTH_SECRET).expect("encrypts");
    assert_ne!(first[..SALT_LEN], second[..SALT_LEN]);
    assert_ne!(first[21..HEADER_LEN], second[21..HEADER_LEN]);
    assert_eq!(first[SALT_LEN..20], RECORD_SIZE.to_be_bytes());
    assert_eq!(usize::from(first[20]), UNCOMPRESSED_POINT_LEN);
    assert_eq!(
        first.len(),
        HEADER_LEN + 2 + PADDING_DELIMITER_LEN + TAG_LEN
    );
}

#[test]
fn the_largest_payload_makes_the_largest_body_and_one_byte_more_is_refused() {
    assert_eq!(MAX_PUSH_PAYLOAD, 3993, "RFC 8291 section 4's figure");
    let largest = vec![0x5a; MAX_PUSH_PAYLOAD];
    let body = encrypt(&largest, rfc8291::UA_PUBLIC, rfc8291::AUTH_SECRET).expect("fits");
    assert_eq!(body.len(), MAX_PUSH_BODY);

    let too_long = vec![0x5a; MAX_PUSH_PAYLOAD + 1];
    let error = encrypt(&too_long, rfc8291::UA_PUBLIC, rfc8291::AUTH_SECRET).unwrap_err();
    assert!(
        error.contains("3994 bytes") && error.contains("3993"),
        "{error}"
    );
}

#[test]
fn bad_subscription_keys_are_named() {
    let auth = rfc8291::AUTH_SECRET;
    let not_base64 = encrypt(b"x", "not base64!", auth).unwrap_err();
    assert!(
        not_base64.starts_with("keys.p256dh: not base64url"),
        "{not_base64}"
    );

    let compressed = URL_SAFE_NO_PAD.encode(
        decode_p256dh(rfc8291::UA_PUBLIC)
            .expect("the RFC's p256dh")
            .to_encoded_point(true),
    );
    let error = encrypt(b"x", &compressed, auth).unwrap_err();
    assert!(error.contains("got 33 bytes"), "{error}");

    let mut off_curve = b64(rfc8291::UA_PUBLIC);
    off_curve[64] ^= 1;
    let error = encrypt(b"x", &URL_SAFE_NO_PAD.encode(off_curve), auth).unwrap_err();
    assert_eq!(error, "keys.p256dh: not a P-256 point");

    let error = encrypt(b"x", rfc8291::UA_PUBLIC, &URL_SAFE_NO_PAD.encode([7; 12])).unwrap_err();
    assert_eq!(error, "keys.auth: expected 16 bytes, got 12");

    let padded_auth = format!("{auth}==");
    encrypt(b"x", rfc8291::UA_PUBLIC, &padded_auth).expect("padding is taken");
}

fn fixed_key() -> VapidKey {
    VapidKey::from_secret_bytes(&b64(rfc8291::AS_PRIVATE)).expect("a valid scalar")
}

#[test]
fn a_secret_round_trips_and_bad_ones_are_named() {
    let key = VapidKey::generate();
    let again = VapidKey::from_secret_bytes(&key.to_secret_bytes()).expect("round trips");
    assert_eq!(again.public_key_base64url(), key.public_key_base64url());
    assert_eq!(fixed_key().public_key_base64url(), rfc8291::AS_PUBLIC);

    let error = VapidKey::from_secret_bytes(&[1; 31]).unwrap_err();
    assert_eq!(error, "VAPID private key: expected 32 bytes, got 31");
    let error = VapidKey::from_secret_bytes(&[0; 32]).unwrap_err();
    assert!(error.contains("not a P-256 private key"), "{error}");
    let error = VapidKey::from_secret_bytes(&[0xff; 32]).unwrap_err();
    assert!(error.contains("not a P-256 private key"), "{error}");
}

#[test]
fn debug_shows_the_public_key_and_never_the_secret() {
    let key = fixed_key();
    let shown = format!("{key:?}");
    assert!(shown.contains(rfc8291::AS_PUBLIC), "{shown}");
    assert!(!shown.contains(rfc8291::AS_PRIVATE), "{shown}");
    let secret_hex: String = key
        .to_secret_bytes()
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    assert!(!shown.contains(&secret_hex), "{shown}");
}

#[test]
fn both_pem_forms_are_read_and_others_are_named() {
    let key = fixed_key();
    let secret = SecretKey::from_slice(&key.to_secret_bytes()).expect("valid");
    let pkcs8 = secret.to_pkcs8_pem(LineEnding::LF).expect("PKCS#8 PEM");
    let sec1 = secret.to_sec1_pem(LineEnding::LF).expect("SEC1 PEM");
    for pem in [pkcs8.as_str(), sec1.as_str()] {
        let read = VapidKey::from_pem(pem).expect("reads");
        assert_eq!(read.to_secret_bytes(), key.to_secret_bytes(), "{pem}");
    }

    let error = VapidKey::from_pem("just text").unwrap_err();
    assert!(error.starts_with("VAPID key file: no PEM block"), "{error}");
    let public = "-----BEGIN PUBLIC KEY-----\nAAAA\n-----END PUBLIC KEY-----\n";
    let error = VapidKey::from_pem(public).unwrap_err();
    assert!(error.contains("a PEM \"PUBLIC KEY\" block"), "{error}");
    let swapped = sec1.replace("EC PRIVATE KEY", "PRIVATE KEY");
    let error = VapidKey::from_pem(&swapped).unwrap_err();
    assert!(
        error.starts_with("VAPID key file: not a PKCS#8 P-256 private key"),
        "{error}"
    );
}

const NOW: u64 = 1_700_000_000;

#[test]
fn the_token_is_es256_over_the_endpoint_origin() {
    let key = fixed_key();
    let header = key
        .authorization_at(
            "https://push.example.net:8443/wpush/v2/abc?x=1",
            "mailto:ops@example.com",
            NOW + 3600,
            NOW,
        )
        .expect("signs");
    let (token, public) = header
        .strip_prefix("vapid t=")
        .and_then(|rest| rest.split_once(", k="))
        .expect("vapid t=..., k=...");
    assert_eq!(public, key.public_key_base64url());

    let (signing_input, signature) = token.rsplit_once('.').expect("three parts");
    let (jose_header, claims) = signing_input.split_once('.').expect("three parts");
    assert_eq!(b64(jose_header), br#"{"typ":"JWT","alg":"ES256"}"#);
    let claims: serde_json::Value = serde_json::from_slice(&b64(claims)).expect("JSON claims");
    assert_eq!(
        claims,
        serde_json::json!({
            "aud": "https://push.example.net:8443",
            "exp": NOW + 3600,
            "sub": "mailto:ops@example.com",
        })
    );

    let signature = Signature::from_slice(&b64(signature)).expect("64-byte r || s");
    let verifying =
        VerifyingKey::from_sec1_bytes(&b64(public)).expect("an uncompressed public key");
    verifying
        .verify(signing_input.as_bytes(), &signature)
        .expect("the signature verifies");

    let default_port = key
        .authorization_at(
            "https://fcm.googleapis.com:443/fcm/send/x",
            "https://example.com",
            NOW + 60,
            NOW,
        )
        .expect("signs");
    let claims = default_port.split('.').nth(1).expect("claims");
    let claims: serde_json::Value = serde_json::from_slice(&b64(claims)).expect("JSON claims");
    assert_eq!(claims["aud"], "https://fcm.googleapis.com");
}

#[test]
fn bad_tokens_are_refused_with_what_was_wrong() {
    let key = fixed_key();
    let endpoint = "https://push.example.net/x";
    let sub = "mailto:ops@example.com";
    key.authorization_at(endpoint, sub, NOW + MAX_VAPID_LIFETIME_S, NOW)
        .expect("exactly 24 h is allowed");

    let error = key
        .authorization_at(endpoint, sub, NOW + MAX_VAPID_LIFETIME_S + 1, NOW)
        .unwrap_err();
    assert!(
        error.contains("86401 s from now") && error.contains("24 h"),
        "{error}"
    );
    let error = key.authorization_at(endpoint, sub, NOW, NOW).unwrap_err();
    assert!(error.contains("not after now"), "{error}");
    let error = key
        .authorization_at("push.example.net/x", sub, NOW + 60, NOW)
        .unwrap_err();
    assert!(error.contains("not a URL"), "{error}");
    let error = key
        .authorization_at("ftp://push.example.net/x", sub, NOW + 60, NOW)
        .unwrap_err();
    assert!(error.contains("scheme \"ftp\""), "{error}");
    let error = key
        .authorization_at(endpoint, "ops@example.com", NOW + 60, NOW)
        .unwrap_err();
    assert!(error.contains("mailto: or https:"), "{error}");

    let hour = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .expect("after 1970")
        .as_secs()
        + 3600;
    key.authorization(endpoint, sub, hour)
        .expect("an hour ahead, on the real clock");
}
