//! Times as operators read and write them: RFC 3339 in UTC, and durations back from now.
//! Written by hand (civil-calendar arithmetic) rather than with a date crate.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

const DAY: i64 = 86_400;

/// `at` in UTC, RFC 3339: `2026-11-30T12:00:00Z`, or with microseconds
/// (`2026-11-30T12:00:00.123456Z`) when `micros`.
pub(crate) fn format_utc(at: SystemTime, micros: bool) -> String {
    // Times before 1970 are not written by the control plane; they print as the epoch.
    let since = at.duration_since(UNIX_EPOCH).unwrap_or_default();
    let secs = i64::try_from(since.as_secs()).unwrap_or(i64::MAX / 2);
    let (year, month, day) = civil_from_days(secs.div_euclid(DAY));
    let rest = secs.rem_euclid(DAY);
    let (hour, minute, second) = (rest / 3600, rest % 3600 / 60, rest % 60);
    let mut text = format!("{year:04}-{month:02}-{day:02}T{hour:02}:{minute:02}:{second:02}");
    if micros {
        text.push_str(&format!(".{:06}", since.subsec_micros()));
    }
    text.push('Z');
    text
}

/// The value of `--since`: an RFC 3339 time (`2026-11-30T12:00:00Z`, an offset such as
/// `+02:00` is accepted too) or a duration back from now (`90s`, `15m`, `2h`, `1d`).
pub(crate) fn parse_since(text: &str) -> Result<SystemTime, String> {
    let text = text.trim();
    let expected = "expected an RFC 3339 time such as 2026-11-30T12:00:00Z, or a duration \
                    back from now such as 90s, 15m, 2h or 1d";
    if let Some(ago) = parse_ago(text) {
        return ago
            .and_then(|ago| SystemTime::now().checked_sub(ago))
            .ok_or_else(|| format!("{text:?} reaches back too far"));
    }
    parse_rfc3339(text).map_err(|why| {
        if text.starts_with(|c: char| c.is_ascii_digit()) {
            format!("{text:?} is not a time: {why}; {expected}")
        } else {
            format!("{text:?} is not a time: {expected}")
        }
    })
}

/// The value of `--older-than`: a duration such as `90s`, `15m`, `2h` or `30d`.
pub(crate) fn parse_duration(text: &str) -> Result<Duration, String> {
    let text = text.trim();
    match parse_ago(text) {
        Some(Some(duration)) => Ok(duration),
        Some(None) => Err(format!("{text:?} is too long a duration")),
        None => Err(format!(
            "{text:?} is not a duration: expected a number and a unit, such as 90s, 15m, 2h or 30d"
        )),
    }
}

/// `None` when `text` is not a relative duration at all; `Some(None)` when it overflows.
fn parse_ago(text: &str) -> Option<Option<Duration>> {
    let unit = text.chars().last()?;
    let seconds: u64 = match unit {
        's' => 1,
        'm' => 60,
        'h' => 3600,
        'd' => 86_400,
        _ => return None,
    };
    let digits = &text[..text.len() - 1];
    if digits.is_empty() || !digits.bytes().all(|byte| byte.is_ascii_digit()) {
        return None;
    }
    Some(
        digits
            .parse::<u64>()
            .ok()
            .and_then(|count| count.checked_mul(seconds))
            .map(Duration::from_secs),
    )
}

/// `YYYY-MM-DDTHH:MM:SS[.fraction](Z|±HH:MM)`.
fn parse_rfc3339(text: &str) -> Result<SystemTime, String> {
    let bytes = text.as_bytes();
    if bytes.len() < 20 || !text.is_ascii() {
        return Err("too short or not ASCII".to_owned());
    }
    let number = |from: usize, to: usize| -> Result<i64, String> {
        let part = &text[from..to];
        if part.bytes().all(|byte| byte.is_ascii_digit()) {
            part.parse::<i64>().map_err(|error| error.to_string())
        } else {
            Err(format!("{part:?} is not a number"))
        }
    };
    let separators = [(4, b'-'), (7, b'-'), (13, b':'), (16, b':')];
    if separators.iter().any(|&(at, byte)| bytes[at] != byte)
        || !matches!(bytes[10], b'T' | b't' | b' ')
    {
        return Err("the layout is not YYYY-MM-DDTHH:MM:SS".to_owned());
    }
    let (year, month, day) = (number(0, 4)?, number(5, 7)?, number(8, 10)?);
    let (hour, minute, second) = (number(11, 13)?, number(14, 16)?, number(17, 19)?);
    if !(1970..=9999).contains(&year) {
        return Err("the year is not between 1970 and 9999".to_owned());
    }
    if !(1..=12).contains(&month) || day < 1 || day > days_in_month(year, month) {
        return Err("no such date".to_owned());
    }
    if hour > 23 || minute > 59 || second > 59 {
        return Err("no such time of day".to_owned());
    }
    let mut rest = &text[19..];
    let mut nanos: u32 = 0;
    if let Some(fraction) = rest.strip_prefix('.') {
        let digits = fraction.bytes().take_while(u8::is_ascii_digit).count();
        if digits == 0 {
            return Err("a '.' without digits".to_owned());
        }
        let mut scaled = String::from(&fraction[..digits.min(9)]);
        while scaled.len() < 9 {
            scaled.push('0');
        }
        nanos = scaled.parse().map_err(|_| "a bad fraction".to_owned())?;
        rest = &fraction[digits..];
    }
    let offset = match rest {
        "Z" | "z" => 0,
        _ => {
            let sign = match rest.as_bytes().first() {
                Some(b'+') => 1,
                Some(b'-') => -1,
                _ => return Err("it does not end with Z or an offset such as +02:00".to_owned()),
            };
            let offset = &rest[1..];
            if offset.len() != 5 || offset.as_bytes()[2] != b':' {
                return Err("the offset is not ±HH:MM".to_owned());
            }
            let hours = number(text.len() - 5, text.len() - 3)?;
            let minutes = number(text.len() - 2, text.len())?;
            if hours > 23 || minutes > 59 {
                return Err("no such offset".to_owned());
            }
            sign * (hours * 3600 + minutes * 60)
        }
    };
    let secs =
        days_from_civil(year, month, day) * DAY + hour * 3600 + minute * 60 + second - offset;
    let secs = u64::try_from(secs).map_err(|_| "before 1970".to_owned())?;
    Ok(UNIX_EPOCH + Duration::new(secs, nanos))
}

fn is_leap(year: i64) -> bool {
    year % 4 == 0 && (year % 100 != 0 || year % 400 == 0)
}

fn days_in_month(year: i64, month: i64) -> i64 {
    match month {
        2 if is_leap(year) => 29,
        2 => 28,
        4 | 6 | 9 | 11 => 30,
        _ => 31,
    }
}

/// Days since 1970-01-01 of a date in the proleptic Gregorian calendar (H. Hinnant's
/// algorithm).
fn days_from_civil(year: i64, month: i64, day: i64) -> i64 {
    let year = if month <= 2 { year - 1 } else { year };
    let era = year.div_euclid(400);
    let year_of_era = year - era * 400;
    let month_from_march = (month + 9) % 12;
    let day_of_year = (153 * month_from_march + 2) / 5 + day - 1;
    let day_of_era = year_of_era * 365 + year_of_era / 4 - year_of_era / 100 + day_of_year;
    era * 146_097 + day_of_era - 719_468
}

/// The date of a day since 1970-01-01; the inverse of [`days_from_civil`].
fn civil_from_days(days: i64) -> (i64, i64, i64) {
    let days = days + 719_468;
    let era = days.div_euclid(146_097);
    let day_of_era = days - era * 146_097;
    let year_of_era =
        (day_of_era - day_of_era / 1460 + day_of_era / 36_524 - day_of_era / 146_096) / 365;
    let day_of_year = day_of_era - (365 * year_of_era + year_of_era / 4 - year_of_era / 100);
    let month_from_march = (5 * day_of_year + 2) / 153;
    let day = day_of_year - (153 * month_from_march + 2) / 5 + 1;
    let month = if month_from_march < 10 {
        month_from_march + 3
    } else {
        month_from_march - 9
    };
    let year = year_of_era + era * 400 + i64::from(month <= 2);
    (year, month, day)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn times_round_trip() {
        for text in [
            "1970-01-01T00:00:00Z",
            "2000-02-29T23:59:59Z",
            "2026-11-30T12:00:00Z",
            "2100-03-01T00:00:01Z",
        ] {
            let at = parse_since(text).unwrap();
            assert_eq!(format_utc(at, false), text);
        }
        let at = parse_since("2026-11-30T14:00:00.5+02:00").unwrap();
        assert_eq!(format_utc(at, true), "2026-11-30T12:00:00.500000Z");
    }

    #[test]
    fn durations_reach_back_from_now() {
        let at = parse_since("2h").unwrap();
        let ago = SystemTime::now().duration_since(at).unwrap();
        assert!(ago >= Duration::from_secs(7200) && ago < Duration::from_secs(7260));
        assert!(parse_since("1d").is_ok() && parse_since("15m").is_ok());
    }

    #[test]
    fn anything_else_is_refused_clearly() {
        for bad in [
            "",
            "yesterday",
            "15",
            "m",
            "-5m",
            "1.5h",
            "2026-11-30",
            "2026-13-01T00:00:00Z",
            "2026-02-30T00:00:00Z",
            "2026-11-30T24:00:00Z",
            "2026-11-30T12:00:00",
            "2026-11-30T12:00:00+2",
            "1969-12-31T23:59:59Z",
            "99999999999999999999d",
            "2026-11-30T12:00:00.Z",
            "２026-11-30T12:00:00Z",
        ] {
            let error = parse_since(bad).unwrap_err();
            assert!(!error.is_empty(), "{bad:?}");
        }
    }
}
