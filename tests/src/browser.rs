//! Headless Chromium driven through chromedriver (WebDriver), for the answer page's tests.
