//! The simulated world: cities, the measured round-trip times between them and the
//! datacenter regions, from the committed files in `data/` (WonderProxy measurements,
//! see `data/README.md` for the attribution and how they are derived).
//!
//! The files are embedded with `include_str!`, so the binary never reads them at run time.

use thiserror::Error;

const CITIES_CSV: &str = include_str!("../data/cities.csv");
const RTT_CSV: &str = include_str!("../data/rtt.csv");
const REGIONS_CSV: &str = include_str!("../data/regions.csv");

/// A city players live in (a WonderProxy server location).
#[derive(Debug, Clone, PartialEq)]
pub struct City {
    /// WonderProxy server id.
    pub id: u32,
    pub name: String,
    pub country: String,
    pub continent: Continent,
    pub latitude: f64,
    pub longitude: f64,
    /// Standard-time offset from UTC in hours; drives the local time of day.
    pub utc_offset_hours: f64,
    /// Relative share of players living here (only ratios matter).
    pub player_weight: f64,
}

/// WonderProxy's continent codes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Continent {
    NorthAmerica,
    SouthAmerica,
    /// WonderProxy groups Europe, the Middle East and Asia together.
    EuropeAsia,
    Oceania,
    Africa,
}

impl Continent {
    fn from_code(code: u8) -> Option<Continent> {
        Some(match code {
            1 => Continent::NorthAmerica,
            2 => Continent::SouthAmerica,
            3 => Continent::EuropeAsia,
            4 => Continent::Oceania,
            5 => Continent::Africa,
            _ => return None,
        })
    }
}

/// A datacenter region (`eu-west`, `us-east`, ...) and the city that stands in for it.
#[derive(Debug, Clone, PartialEq)]
pub struct Region {
    pub name: String,
    /// Index into [`World::cities`].
    pub city: usize,
}

/// Cities, the full symmetric RTT matrix between them, and the datacenter regions.
#[derive(Debug, Clone)]
pub struct World {
    cities: Vec<City>,
    /// Row-major `cities.len()^2` matrix of round-trip times in ms; 0 on the diagonal.
    rtt: Vec<f64>,
    regions: Vec<Region>,
}

/// A defect in the world data files, naming the file and line.
#[derive(Debug, Error, PartialEq)]
#[error("{file} line {line}: {message}")]
pub struct WorldDataError {
    pub file: &'static str,
    pub line: usize,
    pub message: String,
}

impl World {
    /// The world built from the files in `data/`, embedded in the binary.
    pub fn embedded() -> World {
        // The embedded files are checked by the unit tests below; a failure here is a
        // build defect, not an input error.
        World::from_csv(CITIES_CSV, RTT_CSV, REGIONS_CSV)
            .expect("the embedded data/ files are valid (checked by tests)")
    }

    /// Parses the three CSV files (formats in `data/README.md`). Every city pair must
    /// have an RTT; names must not contain commas (no CSV quoting is supported).
    pub fn from_csv(cities: &str, rtt: &str, regions: &str) -> Result<World, WorldDataError> {
        let cities = parse_cities(cities)?;
        let index = |id: u32| cities.iter().position(|c| c.id == id);
        let n = cities.len();

        let mut matrix = vec![f64::NAN; n * n];
        for i in 0..n {
            matrix[i * n + i] = 0.0;
        }
        for (line, fields) in rows("rtt.csv", rtt, 4)? {
            let err = |message: String| WorldDataError {
                file: "rtt.csv",
                line,
                message,
            };
            let a = parse_num::<u32>(fields[0]).ok_or_else(|| err("bad city id a".into()))?;
            let b = parse_num::<u32>(fields[1]).ok_or_else(|| err("bad city id b".into()))?;
            let ms = parse_num::<f64>(fields[2])
                .filter(|ms| ms.is_finite() && *ms >= 0.0)
                .ok_or_else(|| {
                    err(format!(
                        "rtt_ms {:?} is not a non-negative number",
                        fields[2]
                    ))
                })?;
            let (Some(i), Some(j)) = (index(a), index(b)) else {
                return Err(err(format!("pair {a},{b} names a city not in cities.csv")));
            };
            matrix[i * n + j] = ms;
            matrix[j * n + i] = ms;
        }
        if let Some(k) = matrix.iter().position(|v| v.is_nan()) {
            return Err(WorldDataError {
                file: "rtt.csv",
                line: 0,
                message: format!(
                    "no RTT between {} and {}",
                    cities[k / n].name,
                    cities[k % n].name
                ),
            });
        }

        let mut parsed_regions = Vec::new();
        for (line, fields) in rows("regions.csv", regions, 3)? {
            let id = parse_num::<u32>(fields[1]).and_then(index);
            let Some(city) = id else {
                return Err(WorldDataError {
                    file: "regions.csv",
                    line,
                    message: format!("city_id {:?} is not in cities.csv", fields[1]),
                });
            };
            parsed_regions.push(Region {
                name: fields[0].to_string(),
                city,
            });
        }
        if parsed_regions.is_empty() {
            return Err(WorldDataError {
                file: "regions.csv",
                line: 0,
                message: "no regions".into(),
            });
        }
        Ok(World {
            cities,
            rtt: matrix,
            regions: parsed_regions,
        })
    }

    pub fn cities(&self) -> &[City] {
        &self.cities
    }

    pub fn regions(&self) -> &[Region] {
        &self.regions
    }

    /// Measured round-trip time in ms between two cities (indices into `cities()`).
    pub fn rtt(&self, a: usize, b: usize) -> f64 {
        self.rtt[a * self.cities.len() + b]
    }

    /// The region whose city is closest (by measured RTT) to city `city`.
    pub fn nearest_region(&self, city: usize) -> usize {
        (0..self.regions.len())
            .min_by(|&a, &b| {
                self.rtt(city, self.regions[a].city)
                    .total_cmp(&self.rtt(city, self.regions[b].city))
            })
            .expect("a world has at least one region")
    }

    /// The same world with the cities' player weights replaced by `weight(index, city)`
    /// (e.g. only the players of one region: the others weigh 0).
    pub fn with_player_weights(&self, weight: impl Fn(usize, &City) -> f64) -> World {
        let mut world = self.clone();
        for (k, city) in world.cities.iter_mut().enumerate() {
            city.player_weight = weight(k, &self.cities[k]);
        }
        world
    }

    /// Index of the city with this name, if any.
    pub fn city_named(&self, name: &str) -> Option<usize> {
        self.cities.iter().position(|c| c.name == name)
    }
}

fn parse_cities(text: &str) -> Result<Vec<City>, WorldDataError> {
    let mut cities = Vec::new();
    for (line, f) in rows("cities.csv", text, 8)? {
        let err = |field: &str| WorldDataError {
            file: "cities.csv",
            line,
            message: format!("bad {field}"),
        };
        let continent = parse_num::<u8>(f[3])
            .and_then(Continent::from_code)
            .ok_or_else(|| err("continent"))?;
        let weight = parse_num::<f64>(f[7])
            .filter(|w| w.is_finite() && *w >= 0.0)
            .ok_or_else(|| err("player_weight"))?;
        cities.push(City {
            id: parse_num(f[0]).ok_or_else(|| err("id"))?,
            name: f[1].to_string(),
            country: f[2].to_string(),
            continent,
            latitude: parse_num(f[4]).ok_or_else(|| err("latitude"))?,
            longitude: parse_num(f[5]).ok_or_else(|| err("longitude"))?,
            utc_offset_hours: parse_num(f[6]).ok_or_else(|| err("utc_offset_hours"))?,
            player_weight: weight,
        });
    }
    if cities.is_empty() {
        return Err(WorldDataError {
            file: "cities.csv",
            line: 0,
            message: "no cities".into(),
        });
    }
    Ok(cities)
}

/// The data rows of a header-led CSV file with exactly `width` unquoted fields, with their
/// 1-based line numbers.
fn rows<'a>(
    file: &'static str,
    text: &'a str,
    width: usize,
) -> Result<Vec<(usize, Vec<&'a str>)>, WorldDataError> {
    let mut out = Vec::new();
    for (k, raw) in text.lines().enumerate().skip(1) {
        if raw.trim().is_empty() {
            continue;
        }
        let fields: Vec<&str> = raw.split(',').map(str::trim).collect();
        if fields.len() != width {
            return Err(WorldDataError {
                file,
                line: k + 1,
                message: format!("expected {width} fields, found {}", fields.len()),
            });
        }
        out.push((k + 1, fields));
    }
    Ok(out)
}

fn parse_num<T: std::str::FromStr>(s: &str) -> Option<T> {
    s.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn embedded_world_covers_every_continent_and_region() {
        let world = World::embedded();
        assert!(
            world.cities().len() >= 40,
            "{} cities",
            world.cities().len()
        );
        for continent in [
            Continent::NorthAmerica,
            Continent::SouthAmerica,
            Continent::EuropeAsia,
            Continent::Oceania,
            Continent::Africa,
        ] {
            assert!(
                world.cities().iter().any(|c| c.continent == continent),
                "no city in {continent:?}"
            );
        }
        let names: Vec<&str> = world.regions().iter().map(|r| r.name.as_str()).collect();
        assert!(
            names.contains(&"eu-west") && names.contains(&"au-east"),
            "{names:?}"
        );
        assert!(world.regions().len() >= 8);
    }

    #[test]
    fn rtt_is_symmetric_and_plausible() {
        let world = World::embedded();
        let london = world.city_named("London").unwrap();
        let frankfurt = world.city_named("Frankfurt").unwrap();
        let sydney = world.city_named("Sydney").unwrap();
        assert_eq!(world.rtt(london, london), 0.0);
        assert_eq!(world.rtt(london, frankfurt), world.rtt(frankfurt, london));
        assert!(world.rtt(london, frankfurt) < 30.0);
        assert!(world.rtt(london, sydney) > 200.0);
        let n = world.cities().len();
        for a in 0..n {
            for b in 0..n {
                let ms = world.rtt(a, b);
                assert!((0.0..600.0).contains(&ms), "{a} {b} {ms}");
            }
        }
    }

    #[test]
    fn missing_pair_is_reported_by_name() {
        let cities = "id,name,country,continent,latitude,longitude,utc_offset_hours,player_weight\n\
                      1,A,X,3,0,0,0,1\n2,B,X,3,0,1,0,1\n";
        let err = World::from_csv(
            cities,
            "a,b,rtt_ms,source\n",
            "region,city_id,city\nr,1,A\n",
        )
        .unwrap_err();
        assert!(err.message.contains("no RTT between A and B"), "{err}");
    }
}
