//! CPU lists: the CPUs this process may run on, and the lists people write for them (`0`,
//! `0,2`, `0-3,8`), parsed and printed. Parsing is pure: what is available is an argument.

/// A CPU list that cannot be used, said so that the user can fix it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CpuListError {
    #[error("'{0}' is not a CPU list: use e.g. 0 or 0,1 or 0-3")]
    Syntax(String),
    #[error("'{0}' names no CPU")]
    Empty(String),
    #[error("CPU {cpu} is not available to this process (available: {available}); pick from those")]
    Unavailable { cpu: usize, available: String },
    #[error("CPU {cpu} is named twice in {list}")]
    Twice { cpu: usize, list: String },
}

/// A range in a list longer than this is a typo (and would make a huge list).
const MAX_RANGE: usize = 4096;

/// The CPUs this process may run on, in order (at least one).
pub fn online() -> Vec<usize> {
    let mut ids: Vec<usize> =
        core_affinity::get_core_ids().unwrap_or_default().into_iter().map(|c| c.id).collect();
    ids.sort_unstable();
    if ids.is_empty() {
        ids.push(0);
    }
    ids
}

/// Parse a CPU list and check each CPU is one of `available`.
pub fn parse(list: &str, available: &[usize]) -> Result<Vec<usize>, CpuListError> {
    let mut cpus = Vec::new();
    for part in list.split(',').map(str::trim).filter(|p| !p.is_empty()) {
        let (lo, hi) = part.split_once('-').unwrap_or((part, part));
        let bad = || CpuListError::Syntax(list.to_string());
        let lo: usize = lo.trim().parse().map_err(|_| bad())?;
        let hi: usize = hi.trim().parse().map_err(|_| bad())?;
        if lo > hi || hi - lo > MAX_RANGE {
            return Err(bad());
        }
        cpus.extend(lo..=hi);
    }
    if cpus.is_empty() {
        return Err(CpuListError::Empty(list.to_string()));
    }
    let mut seen = std::collections::BTreeSet::new();
    for &cpu in &cpus {
        if !available.contains(&cpu) {
            return Err(CpuListError::Unavailable { cpu, available: format(available) });
        }
        if !seen.insert(cpu) {
            return Err(CpuListError::Twice { cpu, list: list.to_string() });
        }
    }
    Ok(cpus)
}

/// `0-3,8` style text for a CPU list.
pub fn format(cpus: &[usize]) -> String {
    let mut parts: Vec<String> = Vec::new();
    let mut i = 0;
    while i < cpus.len() {
        let mut j = i;
        while j + 1 < cpus.len() && cpus[j + 1] == cpus[j] + 1 {
            j += 1;
        }
        parts.push(match j - i {
            0 => cpus[i].to_string(),
            1 => format!("{},{}", cpus[i], cpus[j]),
            _ => format!("{}-{}", cpus[i], cpus[j]),
        });
        i = j + 1;
    }
    parts.join(",")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lists_parse_against_what_is_available() {
        let available = [0, 1, 2, 3, 8];
        assert_eq!(parse("0", &available), Ok(vec![0]));
        assert_eq!(parse("0-3,8", &available), Ok(vec![0, 1, 2, 3, 8]));
        assert!(matches!(parse("9", &available), Err(CpuListError::Unavailable { cpu: 9, .. })));
        assert!(matches!(parse("0,0", &available), Err(CpuListError::Twice { cpu: 0, .. })));
        assert!(matches!(parse("3-1", &available), Err(CpuListError::Syntax(_))));
        assert!(matches!(parse("x", &available), Err(CpuListError::Syntax(_))));
        assert!(matches!(parse(",", &available), Err(CpuListError::Empty(_))));
    }

    #[test]
    fn lists_print_as_people_write_them() {
        assert_eq!(format(&[0, 1, 2, 3, 8]), "0-3,8");
        assert_eq!(format(&[0, 1]), "0,1");
        assert_eq!(format(&[5]), "5");
        assert_eq!(format(&[]), "");
    }
}
