    // units (image, channel block, group of `rows` output rows) in one contiguous range per core
    __aicore__ inline void Process()
    {
        const uint32_t first = AscendC::GetBlockIdx() * t_.perCore;
        const uint32_t last = first + t_.perCore < t_.units ? first + t_.perCore : t_.units;
        for (uint32_t u = first; u < last; ++u) {
            const uint32_t plane = u / t_.groups;   // (image, channel block)
            const uint32_t r0 = (u % t_.groups) * t_.rows;
            const uint32_t rows = t_.oh - r0 < t_.rows ? t_.oh - r0 : t_.rows;
            CopyIn(plane, plane % t_.c1, r0, rows);
            Compute(rows);
            CopyOut(plane, r0, rows);
        }
    }

private:
    // the padded input rows [top, bot) output rows r0 .. r0 + rows read, and the image rows [lo, hi) of them
    __aicore__ inline void Window(uint32_t r0, uint32_t rows, int32_t& top, int32_t& bot, uint32_t& lo, uint32_t& hi) const
    {
        top = static_cast<int32_t>(r0 * t_.stride) - static_cast<int32_t>(t_.padTop);
        bot = static_cast<int32_t>((r0 + rows - 1) * t_.stride + t_.kh) - static_cast<int32_t>(t_.padTop);
        lo = top > 0 ? top : 0;
        hi = bot < static_cast<int32_t>(t_.h) ? bot : t_.h;
    }
